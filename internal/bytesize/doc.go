// Package bytesize writes sizes for people, in one way across airlock's
// messages and the reviewer's prompt: "512 B", "1.2 KiB", "10 MiB".
package bytesize
