// Package journal is the append-only file a durable session writes down
// what it holds: records of a type byte and a payload, each with its
// length and a CRC-32C, appended with one pwritev(2) per batch (per 1,024
// parts of it: large payloads are written from where they are, not copied).
//
// A batch is durable against the process being killed as soon as Write
// returns: the bytes are in the kernel's page cache, which a SIGKILL does
// not touch. Against the machine stopping, Sync (called by the owner about
// once a second, and at Close) flushes them to the disk.
//
// Records up to the last commit record (a batch's last record, by the
// owner's convention) form the journal's state; anything after it is a
// batch that was torn by a crash, and Open cuts it off. Rewrite replaces
// the whole file atomically (write a new one, fsync, rename), which is how
// the owner compacts it.
//
// The file is the local store's (package store/files); Batch and Records
// are how every store takes records (store.Journal), and package record
// what they hold.
package journal
