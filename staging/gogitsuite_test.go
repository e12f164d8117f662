package staging_test

import (
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"
	gogittest "github.com/go-git/go-git/v5/storage/test"
	. "gopkg.in/check.v1" //nolint:staticcheck // check.v1's assertions are written unqualified, as go-git's suite is

	"github.com/airlock-dev/airlock/staging"
)

// go-git's own storage suite, run against staging.Store: the suite go-git's
// memory and filesystem storages pass, so the store's object storer
// behaves as go-git's object package expects (types, hashes, iteration,
// not found) and not only as airlock's own tests check it.
func TestGoGitStorageSuite(t *testing.T) { TestingT(t) }

// objectsOnly is what the suite needs: a staging.Store for objects and
// go-git's memory storages for what a Store deliberately does not hold
// (references, config, shallow, index, modules live in the targets, not
// in the sandbox's object database). The tests of those parts are skipped
// below, so every test that runs exercises the Store.
type objectsOnly struct {
	*staging.Store
	memory.ReferenceStorage
	memory.ConfigStorage
	memory.ShallowStorage
	memory.IndexStorage
	memory.ModuleStorage
}

type storeSuite struct {
	gogittest.BaseStorageSuite
}

var _ = Suite(&storeSuite{})

func (s *storeSuite) SetUpTest(c *C) {
	st := &objectsOnly{
		Store:            staging.NewStore(0),
		ReferenceStorage: make(memory.ReferenceStorage),
		ModuleStorage:    make(memory.ModuleStorage),
	}
	s.BaseStorageSuite = gogittest.NewBaseStorageSuite(st)
}

const noRefs = "staging.Store holds objects only: references live in the target, not in the sandbox's object database"

func (s *storeSuite) TestSetReferenceAndGetReference(c *C) { c.Skip(noRefs) }
func (s *storeSuite) TestCheckAndSetReference(c *C)        { c.Skip(noRefs) }
func (s *storeSuite) TestCheckAndSetReferenceNil(c *C)     { c.Skip(noRefs) }
func (s *storeSuite) TestCheckAndSetReferenceError(c *C)   { c.Skip(noRefs) }
func (s *storeSuite) TestRemoveReference(c *C)             { c.Skip(noRefs) }
func (s *storeSuite) TestRemoveReferenceNonExistent(c *C)  { c.Skip(noRefs) }
func (s *storeSuite) TestGetReferenceNotFound(c *C)        { c.Skip(noRefs) }
func (s *storeSuite) TestIterReferences(c *C)              { c.Skip(noRefs) }
func (s *storeSuite) TestSetShallowAndShallow(c *C) {
	c.Skip("staging.Store holds no shallow list: a sandbox never fetches shallow history")
}
func (s *storeSuite) TestSetConfigAndConfig(c *C) {
	c.Skip("staging.Store holds no git config: the worker's config is its worker file")
}
func (s *storeSuite) TestSetConfigInvalid(c *C) {
	c.Skip("staging.Store holds no git config: the worker's config is its worker file")
}
func (s *storeSuite) TestIndex(c *C) {
	c.Skip("staging.Store holds no index: the staging Area is the index")
}
func (s *storeSuite) TestSetIndexAndIndex(c *C) {
	c.Skip("staging.Store holds no index: the staging Area is the index")
}
func (s *storeSuite) TestModule(c *C) {
	c.Skip("staging.Store holds no submodules: gitlinks are refused (memfs guard)")
}
