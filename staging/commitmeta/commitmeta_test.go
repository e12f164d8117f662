package commitmeta_test

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/staging/commitmeta"
)

// A message is kept as git keeps it after `git commit --cleanup=strip`
// would, with line endings made one: no carriage return reaches a commit,
// where it would redraw a line in a reader's terminal.
func TestCleanMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Add a report", "Add a report\n"},
		{"Subject\r\n\r\nBody line\r\n", "Subject\n\nBody line\n"},
		{"Approved fix\rrm -rf everything", "Approved fix\nrm -rf everything\n"},
		{"Subject  \n\n\n\nbody\t\n\n", "Subject\n\nbody\n"},
		{"\n\nSubject", "Subject\n"},
		{"Old Mac\r\rlines\r", "Old Mac\n\nlines\n"},
	} {
		got, err := commitmeta.CleanMessage(c.in)
		if err != nil || got != c.want {
			t.Errorf("CleanMessage(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", " \r\n\t", "bell\a", "nul\x00", "\xff"} {
		if _, err := commitmeta.CleanMessage(bad); !errors.Is(err, commitmeta.ErrInvalidMessage) {
			t.Errorf("CleanMessage(%q): %v, want ErrInvalidMessage", bad, err)
		}
	}
}
