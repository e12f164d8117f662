// Package record is the form a durable session's state takes in its
// journal, and the way back: the record types, the writer that turns what
// a session holds into one batch of records per change (a delta against
// what the journal already has), and the reader that replays a journal's
// records into trees, staged commits and checkpoints again.
//
// It knows nothing of where records are kept (package store and its
// implementations do) nor of a session's own fields beyond an opaque JSON
// record (package session writes and reads that one).
//
// Records are of two types:
//
//	object  a git object (blob, tree, commit), in git's own format: its
//	        type and content, named by its SHA-1. Each object is written
//	        once; content-addressing makes the journal share a file's
//	        content between the workspace, checkpoints and commits.
//	state   what changed in the session's state, as JSON: the live tree as
//	        a delta against the previous record's, the checkpoints (each
//	        unchanged, or a delta against a tree of the same record), the
//	        staging area (commits, bases and views by id) and the
//	        session's own record (opaque here).
//
// A state record ends its batch (IsCommit): a batch cut short by a crash
// has none and is dropped whole when the journal is opened, so a call is
// in the journal all or not at all.
package record
