package main

import (
	"strings"
	"testing"
)

// airlock review --help describes every key of the reviewer's prompts.
func TestReviewHelpDescribesTheKeys(t *testing.T) {
	root := t.TempDir()
	out, errOut, code := runAirlock(t, isolatedEnv(t, root), t.TempDir(), "review", "--help")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	help := out + errOut
	for _, want := range []string{
		"  d  the diff", "  f  the full diff", "  a  approve", "  r  reject", "  c  comment", "  p  pick",
		"y  accept this hunk", "n  leave it out", "s  split it", "a  accept the rest", "d  leave out the rest",
		"e  edit this commit's message", "k keeps the body", "q  stop picking", "  m  every commit that lands", "  l  back to the list", "  ?  help",
		"a allow once", "r deny", "-once",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("airlock review --help lacks %q:\n%s", want, help)
		}
	}
}
