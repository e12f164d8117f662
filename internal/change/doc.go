// Package change owns the one type that says what a change does to a path
// (Kind: create, update, delete, and rename or copy as git's -M -C finds them), with its two spellings: the word
// ("create", "update", "delete", "rename", "copy": String, and the text form a push request
// carries on the wire and in the journal) and the sign a list of files
// shows ("+", "M", "-", "R", "C"). The workspace's changes (memfs), a staged
// commit's files (staging) and a push request's files (approval) all use
// it; it imports nothing of airlock's, so each of them can.
package change
