//go:build !linux

package gitread

import (
	"errors"
	"os"
)

var errNoBeneath = errors.New("reading a working tree's files beneath it needs Linux's openat2")

func openBeneath(int, string) (*os.File, fileStat, error) { return nil, fileStat{}, errNoBeneath }

func openDir(string) (int, error) { return -1, errNoBeneath }

func closeDir(int) {}

// openIndex is never called where a working tree is not read.
func openIndex(string) (*os.File, error) { return nil, errNoBeneath }
