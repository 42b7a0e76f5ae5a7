package termsafe_test

import (
	"fmt"

	"github.com/mailagent/mailagent/internal/termsafe"
)

func Example() {
	subject := "Invoice\x1b]0;pwned\x07 \u202etxt.exe\u202c"
	fmt.Println(termsafe.Line(subject))
	fmt.Println(termsafe.Address("bob@bank.test", "evil@x.test"))
	fmt.Println(termsafe.Address("Bob", "bob@bank.test"))
	// Output:
	// Invoice txt.exe
	// evil@x.test (name "bob@bank.test" looks like an address)
	// Bob <bob@bank.test>
}
