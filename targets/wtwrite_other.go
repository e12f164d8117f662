//go:build !unix

package targets

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

var errUnsafePath = errors.New("unsafe path in the working tree")

type wtWriter struct{}

func openWTWriter(worktree, tmpDir string) (*wtWriter, error) {
	return nil, errors.New("pushing to a checked-out branch needs a Unix system; push to another branch or a bare repository")
}

func (w *wtWriter) Close()                                        {}
func (w *wtWriter) write(string, filemode.FileMode, []byte) error { return errUnsafePath }
func (w *wtWriter) remove(string) error                           { return errUnsafePath }
func (w *wtWriter) stat(string) (wtEntry, error)                  { return wtEntry{}, errUnsafePath }
