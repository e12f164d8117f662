// Package textcap keeps the first part of a long text (a diff, a listing)
// and only counts the rest, so that a diff of a whole workspace is never
// held whole to show a page of it. The worker's tools and the reviewer's
// request both cut through it.
package textcap
