// Package pkgtest checks the .deb/.rpm configuration (packaging/nfpm.yaml) and the
// recipe that generates what they ship (packaging/prepare.sh): it keeps
// .goreleaser.yaml's nfpms section equal to nfpm.yaml, the source of truth.
package pkgtest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// content is one entry of a contents list.
type content struct {
	Src  string `yaml:"src"`
	Dst  string `yaml:"dst"`
	Type string `yaml:"type"`
}

// meta is the package metadata both files must agree on.
type meta struct {
	Section     string    `yaml:"section"`
	Priority    string    `yaml:"priority"`
	Maintainer  string    `yaml:"maintainer"`
	Description string    `yaml:"description"`
	Vendor      string    `yaml:"vendor"`
	Homepage    string    `yaml:"homepage"`
	Conflicts   []string  `yaml:"conflicts"`
	License     string    `yaml:"license"`
	Contents    []content `yaml:"contents"`
}

type nfpmFile struct {
	Name string `yaml:"name"`
	meta `yaml:",inline"`
}

type goreleaserFile struct {
	Nfpms []struct {
		PackageName string   `yaml:"package_name"`
		Formats     []string `yaml:"formats"`
		Bindir      string   `yaml:"bindir"`
		meta        `yaml:",inline"`
	} `yaml:"nfpms"`
	Builds []struct {
		Binary string `yaml:"binary"`
	} `yaml:"builds"`
}

func load(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestGoreleaserNfpmsMatchNfpmYAML: the release's packages (goreleaser) and
// the tested packages (scripts/package-test.sh, from nfpm.yaml) contain the
// same files with the same metadata.
func TestGoreleaserNfpmsMatchNfpmYAML(t *testing.T) {
	t.Parallel()
	var n nfpmFile
	var g goreleaserFile
	load(t, filepath.Join(root, "packaging", "nfpm.yaml"), &n)
	load(t, filepath.Join(root, ".goreleaser.yaml"), &g)
	if len(g.Nfpms) != 1 {
		t.Fatalf(".goreleaser.yaml has %d nfpms entries, want 1", len(g.Nfpms))
	}
	gr := g.Nfpms[0]
	if !reflect.DeepEqual(gr.Formats, []string{"deb", "rpm"}) {
		t.Errorf("goreleaser nfpms formats = %v, want [deb rpm]", gr.Formats)
	}
	if gr.PackageName != n.Name {
		t.Errorf("package name: goreleaser %q, nfpm.yaml %q", gr.PackageName, n.Name)
	}

	// nfpm.yaml lists the binary itself; goreleaser adds it at bindir.
	var rest []content
	binaries := 0
	for _, c := range n.Contents {
		if c.Dst == "/usr/bin/mailagent" {
			binaries++
			continue
		}
		rest = append(rest, c)
	}
	if binaries != 1 {
		t.Errorf("nfpm.yaml installs /usr/bin/mailagent %d times, want 1", binaries)
	}
	if len(g.Builds) == 0 || gr.Bindir+"/"+g.Builds[0].Binary != "/usr/bin/mailagent" {
		t.Errorf("goreleaser installs the binary at %q/<binary>, want /usr/bin/mailagent", gr.Bindir)
	}

	nm, gm := n.meta, gr.meta
	nm.Contents, gm.Contents = rest, gr.Contents
	if !reflect.DeepEqual(nm, gm) {
		t.Errorf("the packages differ between the two files:\n nfpm.yaml:       %+v\n .goreleaser.yaml: %+v", nm, gm)
	}
}

// TestPackagesShipTheDocumentedPaths: the paths the task and README
// promise are in the package (a renamed dst would break completion or
// `systemctl --user enable mailagent-watch` silently).
func TestPackagesShipTheDocumentedPaths(t *testing.T) {
	t.Parallel()
	var n nfpmFile
	load(t, filepath.Join(root, "packaging", "nfpm.yaml"), &n)
	have := map[string]bool{}
	for _, c := range n.Contents {
		have[c.Dst] = true
	}
	for _, want := range []string{
		"/usr/bin/mailagent",
		"/usr/share/man/man1/",
		"/usr/share/man/man5/",
		"/usr/share/bash-completion/completions/mailagent",
		"/usr/share/zsh/vendor-completions/_mailagent",
		"/usr/share/fish/vendor_completions.d/mailagent.fish",
		"/usr/lib/systemd/user/mailagent-watch.service",
		"/usr/share/doc/mailagent-triage/copyright",
	} {
		if !have[want] {
			t.Errorf("nfpm.yaml does not install %s", want)
		}
	}
	if n.Section != "mail" || n.License != "MIT" || !strings.HasPrefix(n.Homepage, "https://") {
		t.Errorf("metadata: section %q license %q homepage %q", n.Section, n.License, n.Homepage)
	}
}

// root is the repository, from this package's directory.
var root = filepath.Join("..", "..", "..")
