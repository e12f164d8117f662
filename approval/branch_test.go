package approval_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
)

// TestCheckProtectAdviceWorks: each refusal of a protect pattern says what
// to write instead, and what it suggests is taken and protects the branch
// meant; a tag is not turned into a branch named "tags/...".
func TestCheckProtectAdviceWorks(t *testing.T) {
	for _, c := range []struct {
		pattern, says, suggests, branch string
	}{
		{"refs/heads/main", "name the branch itself", "main", "main"},
		{"refs/heads/release/*", "name the branch itself", "release/*", "release/2"},
		{"refs/tags/v1", "is not a branch", "", ""},
		{"refs/heads/", "is not a branch", "", ""},
		{"", "empty pattern", "", ""},
		{"release/", "empty path component", "", ""},
		{"release/[", "not a branch pattern", "", ""},
	} {
		err := approval.CheckProtect(c.pattern)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("CheckProtect(%q) = %v, want it to say %q", c.pattern, err, c.says)
			continue
		}
		if strings.Contains(err.Error(), `"tags/`) {
			t.Errorf("CheckProtect(%q) suggests a branch named after a tag: %v", c.pattern, err)
		}
		if c.suggests == "" {
			continue
		}
		if !strings.Contains(err.Error(), `"`+c.suggests+`"`) {
			t.Errorf("CheckProtect(%q) = %v, want it to suggest %q", c.pattern, err, c.suggests)
		}
		if err := approval.CheckProtect(c.suggests); err != nil {
			t.Errorf("the suggested %q is refused too: %v", c.suggests, err)
		}
		req := approval.Request{Ref: c.branch}
		if flags := approval.Assess(&req, approval.Rules{Protected: []string{c.suggests}}, nil); len(flags) == 0 || flags[0].Code != approval.FlagProtectedRef {
			t.Errorf("the suggested %q does not protect %s: %v", c.suggests, c.branch, flags)
		}
	}
}

// TestProtectFlagNamesItsPattern: a branch protected by a pattern says
// which entry of the operator's list asked for the yes.
func TestProtectFlagNamesItsPattern(t *testing.T) {
	for _, c := range []struct{ ref, want string }{
		{"main", "pushes to protected branch main"},
		{"release/2", "pushes to protected branch release/2 (protect: release/*)"},
	} {
		req := approval.Request{Ref: c.ref}
		var got []string
		for _, f := range approval.Assess(&req, approval.Rules{Protected: []string{"main", "release/*"}}, nil) {
			if f.Code == approval.FlagProtectedRef {
				got = append(got, f.Message)
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: protected-ref flags %q, want [%q]", c.ref, got, c.want)
		}
	}
}
