// Package files is the local store of durable sessions (store.Store): a
// directory per session under the sessions directory, its journal a file
// (package journal), its hold an flock(2) on a lock file that the kernel
// drops when the holder dies. Every path it opens refuses a symbolic link
// (a session's directory replaced by a link out of the state directory
// would have the session written there). It runs the store conformance
// suite (package storetest).
package files
