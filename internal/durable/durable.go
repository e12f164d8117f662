package durable

import "os"

// SyncDir flushes the directory dir, so that a file created or renamed
// in it is there after a power cut. Its error is the caller's to handle:
// until it succeeds, the rename may be undone by a crash of the machine.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
