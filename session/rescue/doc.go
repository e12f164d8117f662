// Package rescue takes a saved session's work out for a person, without
// resuming it: its files written to a directory, its staged commits as a
// git bundle (airlock sessions show and export). Package session reads
// the session's journal into an Inspection; nothing here writes to the
// session's store or opens a target of its own (the lazy files' sources
// are opened by Inspection.Attach).
package rescue
