// Package blobsrc reads the blobs a staging.Store does not hold from where
// they already are: the object database of the repository a base was
// pulled from (a local repository's packs, GitHub's API). A base's blobs
// are never copied into the store; they are read through its Sources on
// first use and kept in a cache of bounded size that may drop them at any
// time, because they can always be read again.
//
// It owns the source interfaces the targets implement (Source, and
// BatchSource and StreamSource for those that read many blobs at once),
// the order sources are tried in (newest first), the check of every blob
// against its id (a repository on disk is hostile until checked), the
// advice an unreadable blob's error gives, and the cache. staging.Store
// holds one Sources and forwards to it; staging keeps the interfaces'
// old names (BlobSource, BlobBatchSource, BlobStreamSource) as aliases.
package blobsrc
