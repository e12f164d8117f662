//go:build !unix

package worktree

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

var ErrUnsafePath = errors.New("unsafe path in the working tree")

type Writer struct{}

func Open(worktree, tmpDir string) (*Writer, error) {
	return nil, errors.New("pushing to a checked-out branch needs a Unix system; push to another branch or a bare repository")
}

func (w *Writer) Close()                                        {}
func (w *Writer) Write(string, filemode.FileMode, []byte) error { return ErrUnsafePath }
func (w *Writer) Remove(string) error                           { return ErrUnsafePath }
func (w *Writer) Stat(string) (Entry, error)                    { return Entry{}, ErrUnsafePath }
