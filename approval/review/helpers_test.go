package review_test

import "github.com/go-git/go-git/v5/plumbing"

func hash(s string) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, []byte(s)) }
