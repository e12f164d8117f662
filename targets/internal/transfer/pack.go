package transfer

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/airlock-dev/airlock/staging"
)

// packBatch is how many objects one worker compresses at a time.
const packBatch = 64

// WritePack writes objs as a version 2 packfile without deltas (deltas
// save bytes on a network; between processes on one machine the search
// for them costs more than it saves). Objects are compressed in parallel,
// fast and for a fast inflate (see packDeflater; a repack there
// recompresses as it likes), and written in order through w. It replaces
// go-git's encoder, which resets a default-level compressor per object:
// most of a push's time.
func WritePack(w io.Writer, s storer.EncodedObjectStorer, objs []plumbing.Hash) error {
	sum := sha1.New() // the pack's trailer, not an object id: plain SHA-1
	out := io.MultiWriter(w, sum)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	if _, err := out.Write(hdr[:]); err != nil {
		return err
	}
	type batch struct {
		buf  bytes.Buffer
		err  error
		done chan struct{}
	}
	n := (len(objs) + packBatch - 1) / packBatch
	batches := make([]*batch, n)
	for i := range batches {
		batches[i] = &batch{done: make(chan struct{})}
	}
	workers := runtime.GOMAXPROCS(0)
	// At most this many batches are compressed and not yet written: the
	// pack is never held whole in memory.
	ahead := make(chan struct{}, 2*workers)
	next := make(chan int)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(next)
		for i := range batches {
			select {
			case ahead <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case next <- i:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			zw := new(packDeflater)
			for i := range next {
				b := batches[i]
				end := min((i+1)*packBatch, len(objs))
				for _, h := range objs[i*packBatch : end] {
					if b.err = packEntry(&b.buf, zw, s, h); b.err != nil {
						break
					}
				}
				close(b.done)
			}
		}()
	}
	defer wg.Wait()
	for _, b := range batches {
		<-b.done
		if b.err != nil {
			return b.err
		}
		if _, err := out.Write(b.buf.Bytes()); err != nil {
			return err
		}
		b.buf = bytes.Buffer{} // let it go
		<-ahead
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// packEntry appends object h to buf as a pack entry: its type and size,
// then its content deflated.
func packEntry(buf *bytes.Buffer, zw *packDeflater, s storer.EncodedObjectStorer, h plumbing.Hash) error {
	var data []byte
	var typ plumbing.ObjectType
	if st, ok := s.(*staging.Store); ok {
		// The store's blobs are shared bytes: no copy to compress them.
		if o, err := st.EncodedObject(plumbing.AnyObject, h); err == nil && o.Type() == plumbing.BlobObject {
			if data, err = st.ReadBlob(h); err != nil {
				return err
			}
			typ = plumbing.BlobObject
		}
	}
	if data == nil {
		o, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("object %s of the push: %w", h, err)
		}
		r, err := o.Reader()
		if err != nil {
			return err
		}
		data, err = io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		typ = o.Type()
	}
	size := len(data)
	c := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		buf.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	buf.WriteByte(c)
	zw.compress(buf, data)
	return nil
}
