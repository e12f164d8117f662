// Package search is search_files's engine: a regular expression matched
// line by line over one snapshot of a memfs workspace, as the worker's view
// shows it (the path guard, the deny list, symlinks followed to the root
// but never below it), its files searched in parallel and the answers put
// back in path order.
//
// It owns the search's speed (plan.go: a literal every match needs is
// found first, so the regular expression runs only on the lines that hold
// it) and the answer's text. The tool's arguments, its schema and the
// worker's error type belong to gittools, which calls Workspace; a query
// the worker must change comes back as *QueryError.
package search
