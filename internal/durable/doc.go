// Package durable holds what makes a file's creation or rename survive a
// power cut, beyond the file's own fsync: the fsync of its directory.
package durable
