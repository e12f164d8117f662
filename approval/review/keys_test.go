package review

import (
	"regexp"
	"strings"
	"testing"
)

// TestKeysHelpListsThePromptsKeys: every key the prompt's own ? lists
// (helpText, helpHunks, helpFiles) is in airlock review --help too, so the
// two never disagree on what a key exists for (w was missing there), and
// the view's whitespace key is in its paragraph.
func TestKeysHelpListsThePromptsKeys(t *testing.T) {
	key := regexp.MustCompile(`(?m)^  (\S)  `)
	for _, text := range []string{helpText, helpHunks, helpFiles, helpBack} {
		for _, m := range key.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(KeysHelp, "\n  "+m[1]+"  ") {
				t.Errorf("the prompt's ? lists %q, airlock review --help does not:\n%s", m[1], KeysHelp)
			}
		}
	}
	_, view, _ := strings.Cut(KeysHelp, "In the full-screen diff")
	view, _, _ = strings.Cut(view, "At a network request's prompt")
	for _, want := range []string{"w whitespace ignored", "x accept or leave out", "m marks the file viewed"} {
		if !strings.Contains(strings.Join(strings.Fields(view), " "), want) {
			t.Errorf("airlock review --help's full-screen keys lack %q:\n%s", want, view)
		}
	}
}
