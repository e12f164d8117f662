package gitread

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	"github.com/airlock-dev/airlock/targets/internal/transfer"
	"github.com/go-git/go-git/v5/plumbing"
)

// catFile reads objects from a repository on this machine through git
// itself: a pool of long-lived `git cat-file --batch` processes, started
// as they are needed (at most one per core), each answering one object
// after another over its pipes.
//
// Why git and not go-git's storage: git reads every object a repository
// can hold the way git wrote it (deltas of any depth, ofs and ref, packs
// under a multi-pack-index, alternates, a partial clone's promisor packs,
// whatever a later git writes), it finds packs a gc or repack made since
// it started by itself, and it is the peer the reads are measured
// against. go-git's storage, streamed as a bounded reader needs it
// (LargeObjectThreshold 1), rebuilds some deltas of a real repository
// wrongly (64 of the 1,382 delta blobs of the Go toolchain's src) and is
// about three times slower than git on a whole read.
//
// The repository is hostile until checked: an object's header is read
// first and an object declaring more than the caller can hold is refused
// before its body is read (the process is killed, not drained); each git
// process's data segment is bounded (RLIMIT_DATA), so a delta that
// expands to gigabytes costs git a refusal rather than the machine's
// memory; the caller checks what it gets against the id it asked for.
type catFile struct {
	gitDir string                                  // the repository's common git directory, for errors
	git    func(args ...string) (*exec.Cmd, error) // git on its objects (Source.git)

	idle chan *catProc
	mu   sync.Mutex
	n    int                   // processes started and not yet stopped
	all  map[*catProc]struct{} // for Close
	shut bool
}

// catProc is one `git cat-file --batch` process.
type catProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *headBuffer
	wait   chan struct{} // closed when the process has exited
	limit  uint64        // its RLIMIT_DATA, as bound set it
}

// headBuffer keeps the first max bytes written to it: what git said
// before it stopped.
type headBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.b = append(h.b, p[:min(len(p), h.max-len(h.b))]...)
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(bytes.TrimSpace(h.b))
}

// errCatFileClosed: the source was closed (the target let go of it).
var errCatFileClosed = errors.New("the repository's reader is closed")

// catDataLimit is the data segment each reader process may use beyond
// the largest object it may be asked for: git's own working memory
// (its delta base cache, indexes, zlib buffers).
const catDataLimit = 512 << 20

func newCatFile(gitDir string, git func(args ...string) (*exec.Cmd, error)) *catFile {
	return &catFile{
		gitDir: gitDir,
		git:    git,
		idle:   make(chan *catProc, runtime.GOMAXPROCS(0)),
		all:    map[*catProc]struct{}{},
	}
}

// start runs a new cat-file process with mode "--batch" or
// "--batch-check". --no-replace-objects: an object is read as it is,
// never as a replace ref redirects it (its content would not hash to the
// id asked for).
func (c *catFile) start(mode string) (*catProc, error) {
	cmd, err := c.git("--no-replace-objects", "cat-file", mode)
	if err != nil {
		return nil, err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &headBuffer{max: 2 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting git cat-file in %s: %w", c.gitDir, err)
	}
	p := &catProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: stderr, wait: make(chan struct{})}
	go func() { cmd.Wait(); close(p.wait) }()
	// The process reads nothing before its first request, so the limit
	// is in place before any object is inflated.
	p.bound(0)
	return p, nil
}

// bound limits the process's data segment to what reading an object of
// up to max bytes needs (see limitData), raising it when a caller may now
// ask for more.
func (p *catProc) bound(max int64) {
	want := uint64(catDataLimit + 2*max)
	if want > p.limit && limitData(p.cmd.Process.Pid, want) {
		p.limit = want
	}
}

// get returns an idle process, starts one when fewer than the pool's
// size run, or waits for one.
func (c *catFile) get() (*catProc, error) {
	select {
	case p, ok := <-c.idle:
		if !ok {
			return nil, errCatFileClosed
		}
		return p, nil
	default:
	}
	c.mu.Lock()
	if c.shut {
		c.mu.Unlock()
		return nil, errCatFileClosed
	}
	if c.n < cap(c.idle) {
		c.n++
		c.mu.Unlock()
		p, err := c.start("--batch")
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.n--
			return nil, err
		}
		if c.shut {
			c.n--
			p.stop()
			return nil, errCatFileClosed
		}
		c.all[p] = struct{}{}
		return p, nil
	}
	c.mu.Unlock()
	p, ok := <-c.idle
	if !ok {
		return nil, errCatFileClosed
	}
	return p, nil
}

// put gives p back to the pool, or stops it when it is no longer in a
// state to answer the next request (broken is true).
func (c *catFile) put(p *catProc, broken bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if broken || c.shut {
		delete(c.all, p)
		c.n--
		p.stop()
		return
	}
	c.idle <- p
}

// stop ends the process: it exits at the end of its input, or is killed
// when it is in the middle of an answer nobody will read.
func (p *catProc) stop() {
	p.in.Close()
	select {
	case <-p.wait:
	default:
		p.cmd.Process.Kill()
	}
}

// header is cat-file's line before an object's content.
type header struct {
	id   plumbing.Hash
	typ  plumbing.ObjectType
	size int64
}

// errMissing is cat-file's answer for an object the repository lacks.
var errMissing = plumbing.ErrObjectNotFound

// readHeader reads the answer's first line: "<id> <type> <size>", or
// "<id> missing" (also "ambiguous", for names that are not full ids).
func (p *catProc) readHeader(want plumbing.Hash) (header, error) {
	line, err := p.out.ReadSlice('\n')
	if err != nil {
		return header{}, p.stopped(err)
	}
	f := bytes.Fields(line)
	switch {
	case len(f) == 2 && string(f[1]) == "missing" && string(f[0]) == want.String():
		return header{}, errMissing
	case len(f) != 3:
		return header{}, fmt.Errorf("git cat-file answered %q", line)
	}
	typ, err := plumbing.ParseObjectType(string(f[1]))
	if err != nil {
		return header{}, fmt.Errorf("git cat-file answered an object of type %q", f[1])
	}
	size, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil || size < 0 {
		return header{}, fmt.Errorf("git cat-file answered a size of %q", f[2])
	}
	if string(f[0]) != want.String() {
		return header{}, fmt.Errorf("git cat-file answered %s when asked for %s", f[0], want)
	}
	return header{id: want, typ: typ, size: size}, nil
}

// stopped is the error for a process that stopped answering: what git
// said, if it said anything.
func (p *catProc) stopped(err error) error {
	if msg := p.stderr.String(); msg != "" {
		return fmt.Errorf("git cat-file stopped answering: %s", msg)
	}
	return fmt.Errorf("git cat-file stopped answering: %w", err)
}

// readBody reads the n bytes of an object's content and the newline
// after them into buf (grown as needed).
func (p *catProc) readBody(buf []byte, n int64) ([]byte, error) {
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(p.out, buf); err != nil {
		return nil, p.stopped(err)
	}
	if b, err := p.out.ReadByte(); err != nil || b != '\n' {
		return nil, errors.New("git cat-file's answer does not end where its header said")
	}
	return buf, nil
}

// skipBody reads past an object's content nobody wants.
func (p *catProc) skipBody(n int64) error {
	if _, err := p.out.Discard(int(n)); err != nil {
		return err
	}
	_, err := p.out.ReadByte()
	return err
}

// drainLimit is the largest object the reader reads past rather than
// killing its process: an unexpected type asked for by mistake.
const drainLimit = 1 << 20

// Read returns object h whole if it is of type want (plumbing.AnyObject
// for any) and declares at most max bytes. The content is not checked
// against h: the caller does that.
func (c *catFile) Read(h plumbing.Hash, want plumbing.ObjectType, max int64) (plumbing.ObjectType, []byte, error) {
	var typ plumbing.ObjectType
	var data []byte
	err := c.with(func(p *catProc) (bool, error) {
		p.bound(max)
		if _, err := fmt.Fprintf(p.in, "%s\n", h); err != nil {
			return true, fmt.Errorf("git cat-file stopped reading: %w", err)
		}
		hd, err := p.readHeader(h)
		if err == errMissing {
			return false, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
		}
		if err != nil {
			return true, err
		}
		if want != plumbing.AnyObject && hd.typ != want {
			if hd.size > drainLimit {
				return true, fmt.Errorf("object %s is a %s, not a %s", h, hd.typ, want)
			}
			return p.skipBody(hd.size) != nil, fmt.Errorf("object %s is a %s, not a %s", h, hd.typ, want)
		}
		if hd.size > max {
			// Its body is not read: the process goes, whatever git
			// was about to inflate.
			return true, fmt.Errorf("%s %s declares %d bytes, more than the %d it can hold", hd.typ, h, hd.size, max)
		}
		typ = hd.typ
		data, err = p.readBody(nil, hd.size)
		return err != nil, err
	})
	return typ, data, err
}

// with runs fn on a process of the pool; fn says whether it left the
// process unable to answer the next request. A process that died (say
// the repository's packs were replaced under it and it could no longer
// read one) is replaced once.
func (c *catFile) with(fn func(*catProc) (broken bool, err error)) error {
	for try := 0; ; try++ {
		p, err := c.get()
		if err != nil {
			return err
		}
		broken, err := fn(p)
		dead := false
		select {
		case <-p.wait:
			dead = true
		default:
		}
		c.put(p, broken || dead)
		if err == nil || !dead || try > 0 {
			return err
		}
	}
}

// Each reads the objects ids (of type want) one after another, calling fn
// with each one's content; an object that is missing, of another type or
// declaring more than max bytes is given to fn with its error (and no
// content) instead. Requests are written while answers are read, so git
// never waits for the next id. fn's data is only valid during the call,
// unless own: then each object is read into a buffer of its own, which fn
// may keep. An error of fn or of git, or ctx's end, ends the walk.
func (c *catFile) Each(ctx context.Context, ids []plumbing.Hash, want plumbing.ObjectType, max int64, own bool, fn func(i int, data []byte, err error) error) error {
	for len(ids) > 0 {
		p, err := c.get()
		if err != nil {
			return err
		}
		p.bound(max)
		done, err := p.each(ctx, ids, want, max, own, fn)
		// A process left in the middle of a body (an object too large
		// to read) goes; the rest of the ids go to another.
		c.put(p, err != nil || done < len(ids))
		if err != nil {
			return err
		}
		ids = ids[done:]
	}
	return nil
}

// each is Each on one process. It returns how many of ids it answered:
// all of them, or up to and including an object too large to read, after
// which the process is in the middle of a body and cannot go on.
func (p *catProc) each(ctx context.Context, ids []plumbing.Hash, want plumbing.ObjectType, max int64, own bool, fn func(i int, data []byte, err error) error) (int, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(p.in, 32<<10)
		for _, h := range ids {
			if wctx.Err() != nil {
				// The reader stopped first, and says why. It may be
				// waiting for an id still in w's buffer, or past the
				// last one written: git gets what was written and its
				// input ends, so it answers those and exits, and the
				// reader gets an answer or the end, never a wait for an
				// id git never got. The process is not reused after.
				_ = w.Flush() // a failed flush ends git as well
				_ = p.in.Close()
				werr <- nil
				return
			}
			w.WriteString(h.String())
			w.WriteByte('\n')
		}
		werr <- w.Flush()
	}()
	var buf []byte
	for i := range ids {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		var data []byte
		hd, err := p.readHeader(ids[i])
		switch {
		case err == errMissing:
			err = fmt.Errorf("object %s: %w", ids[i], plumbing.ErrObjectNotFound)
		case err != nil:
			if cerr := ctx.Err(); cerr != nil {
				return i, cerr // git's input was closed for it
			}
			return i, err
		case want != plumbing.AnyObject && hd.typ != want:
			if err := p.skipBody(hd.size); err != nil {
				return i, err
			}
			err = fmt.Errorf("object %s is a %s, not a %s", ids[i], hd.typ, want)
		case hd.size > max:
			return i + 1, fn(i, nil, fmt.Errorf("%s %s declares %d bytes, more than the %d it can hold", hd.typ, ids[i], hd.size, max))
		default:
			if own {
				buf = nil
			}
			if buf, err = p.readBody(buf, hd.size); err != nil {
				return i, err
			}
			data = buf
		}
		if err := fn(i, data, err); err != nil {
			return i, err
		}
	}
	return len(ids), <-werr
}

// ask asks a --batch-check process for object h's header.
func (p *catProc) ask(h plumbing.Hash) (header, error) {
	if _, err := fmt.Fprintf(p.in, "%s\n", h); err != nil {
		return header{}, p.stopped(err)
	}
	hd, err := p.readHeader(h)
	if err == errMissing {
		return header{}, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
	}
	return hd, err
}

// Close stops every process of the pool; reads after it fail.
func (c *catFile) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return
	}
	c.shut = true
	for p := range c.all {
		p.stop()
	}
	c.all = nil
	// Idle processes are among all; a reader waiting in get for one is
	// woken by the close and told the source is closed.
	close(c.idle)
}

// catObjects reads whole objects of any type through a catFile, for
// transfer.CopyCommit: a pull that copies a commit's trees one by one.
type catObjects struct {
	c   *catFile
	max int64
}

// EncodedObject reads object h, checked against its id.
func (o catObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	typ, data, err := o.c.Read(h, t, o.max)
	if err != nil {
		return nil, err
	}
	if plumbing.ComputeHash(typ, data) != h {
		return nil, fmt.Errorf("%s %s read from the repository does not hash to its id", typ, h)
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(typ)
	obj.Write(data)
	return obj, nil
}

// Objects reads whole objects of any type, each of at most max bytes and
// checked against its id, through the source's git processes: what
// transfer.CopyCommit copies a commit from when ListTree cannot list it.
func (src *Source) Objects(max int64) transfer.ObjectReader {
	return catObjects{src.cat, max}
}
