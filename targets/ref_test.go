package targets_test

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/targets"
)

func TestBranchRef(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"main", "refs/heads/main"},
		{"feature/report", "refs/heads/feature/report"},
		{"refs/heads/x", "refs/heads/x"},
		{"café", "refs/heads/café"},
		{"HEAD", ""},
		{"refs/heads/HEAD", ""},
		{"@", ""},
		{"main\u202Egnp", ""},
		{"pay\u200Bments", ""},
		{"\u2066x\u2069", ""},
		{"bom\uFEFF", ""},
		{"a..b", ""},
		{"-x", ""},
		{"x.lock", ""},
		{"a b", ""},
		{"refs/tags/v1", ""},
		{"bad\xff", ""},
	} {
		got, err := targets.BranchRef(tc.name)
		if got != tc.want || (tc.want == "") != errors.Is(err, targets.ErrInvalidRef) {
			t.Errorf("BranchRef(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
