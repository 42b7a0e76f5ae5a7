package mail
import ("os";"testing";"fmt")
func TestX(t *testing.T){ b,_:=os.ReadFile(os.Getenv("F")); m:=Parse(b); fmt.Printf("%q\n%q\n", m.Text[:min(len(m.Text),1500)], m.Problems)}
