package memfs_test

import (
	"testing"

	"github.com/go-git/go-billy/v5/test"
	check "gopkg.in/check.v1"

	"github.com/airlock-dev/airlock/memfs"
)

// go-billy's own suites, run against the workspace's billy view.
func TestBillySuites(t *testing.T) { check.TestingT(t) }

type billySuite struct {
	test.FilesystemSuite
}

var _ = check.Suite(&billySuite{})

func (s *billySuite) SetUpTest(c *check.C) {
	w, err := memfs.New()
	c.Assert(err, check.IsNil)
	s.FilesystemSuite = test.NewFilesystemSuite(w.Billy())
}
