package mirror

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ChangeKind is what a run did at a path.
type ChangeKind int

const (
	Wrote    ChangeKind = iota // a regular file, with its content and mode
	Linked                     // a symlink, with its target
	Removed                    // the path and anything under it are gone
	MadeDir                    // a directory
	Replaced                   // a directory that replaced what lower had there (opaque): what lower had under it is gone
)

// Change is one thing a run did, as its overlay's upper layer records it.
type Change struct {
	Path string // slash-separated, relative to the workspace
	Kind ChangeKind
	Mode fs.FileMode
	Data []byte // a file's content or a symlink's target
	// Other is set for what the workspace cannot hold (a device, a socket,
	// a FIFO): the path and what it is.
	Other string
}

// Changes reads what the last run changed, in the order a replay needs
// (a directory before what is in it). Files larger than maxFile are listed
// with Data nil and Other saying so; the caller refuses them. The walk
// reads directories only (their entries say which are regular files);
// the files are then read by a goroutine per core.
//
// Files are read while their sizes together stay within maxTotal (0: no
// bound), the most the workspace can hold: past it Changes stops reading
// and fails with ErrChangesOverQuota. The run's quota watch counts the
// blocks its files take, so sparse files (truncate -s) cost it nothing,
// and reading them all at their full size held 2.6 GB for a run of 300
// sparse 9 MB files under a 512 MiB quota.
func (m *Mirror) Changes(maxFile, maxTotal int64) ([]Change, error) {
	var out []Change
	var files []int // indexes in out of regular files, to read
	// walk lists the directory rel of upper, whose Change is out[self]
	// (-1: upper itself); each directory is read through its own
	// descriptor, closed before the walk goes down into the next.
	var walk func(rel string, self int) error
	walk = func(rel string, self int) error {
		ents, isOpaque, err := m.readUpperDir(rel)
		if err != nil {
			return err
		}
		if isOpaque && self >= 0 {
			out[self].Kind = Replaced
		}
		for _, e := range ents {
			r := e.name
			if rel != "" {
				r = rel + "/" + r
			}
			switch mode := e.st.Mode; {
			case e.regular:
				out = append(out, Change{Path: r, Kind: Wrote})
				files = append(files, len(out)-1)
			case isWhiteout(uint32(mode), uint64(e.st.Rdev)):
				out = append(out, Change{Path: r, Kind: Removed})
			case mode&unix.S_IFMT == unix.S_IFDIR:
				out = append(out, Change{Path: r, Kind: MadeDir, Mode: fs.FileMode(mode & 0o777)})
				if err := walk(r, len(out)-1); err != nil {
					return err
				}
			case mode&unix.S_IFMT == unix.S_IFLNK:
				out = append(out, Change{Path: r, Kind: Linked, Mode: fs.ModeSymlink | 0o777, Data: []byte(e.target)})
			default:
				out = append(out, Change{Path: r, Kind: Wrote, Other: fileType(uint32(mode))})
			}
		}
		return nil
	}
	if err := walk("", -1); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	var total atomic.Int64 // the sizes of the files read so far
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if maxTotal > 0 && total.Load() > maxTotal {
					continue // over already: nothing more is read
				}
				if err := m.readChange(&out[i], maxFile, &total, maxTotal); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, first
}

// ErrChangesOverQuota: the files a run wrote are larger in all than the
// workspace may hold; they were not read.
var ErrChangesOverQuota = errors.New("the files the run wrote are larger in all than the workspace may hold")

// upperEntry is a name in a directory of upper: a regular file, or what
// lstat says of it (and a link's target).
type upperEntry struct {
	name    string
	regular bool
	st      unix.Stat_t
	target  string
}

// readUpperDir lists the directory rel of upper, and whether overlayfs
// marked it opaque (it replaced what lower had there).
func (m *Mirror) readUpperDir(rel string) ([]upperEntry, bool, error) {
	dir := upperDir
	if rel != "" {
		dir += "/" + rel
	}
	fd, err := openDirAt(m.fd, dir)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	isOpaque := isOpaqueFD(fd)
	ents, err := listDir(f)
	if err != nil {
		return nil, false, &os.PathError{Op: "read", Path: dir, Err: err}
	}
	out := make([]upperEntry, len(ents))
	for i, d := range ents {
		out[i] = upperEntry{name: d.Name(), regular: d.Type().IsRegular()}
		if out[i].regular {
			continue
		}
		if out[i].st, err = lstatAt(fd, d.Name()); err != nil {
			return nil, false, &os.PathError{Op: "lstat", Path: dir + "/" + d.Name(), Err: err}
		}
		if out[i].st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if out[i].target, err = readlinkAt(fd, d.Name()); err != nil {
				return nil, false, &os.PathError{Op: "readlink", Path: dir + "/" + d.Name(), Err: err}
			}
		}
	}
	return out, isOpaque, nil
}

// readChange reads a regular file of the upper layer into c (its mode
// and content, or why it is not taken), without following a link.
func (m *Mirror) readChange(c *Change, maxFile int64, total *atomic.Int64, maxTotal int64) error {
	p := upperDir + "/" + c.Path
	fd, err := openBeneath(m.fd, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: p, Err: err}
	}
	c.Mode = fs.FileMode(st.Mode & 0o777)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		c.Other = "not a regular file"
		return nil
	case st.Size > maxFile:
		c.Other = fmt.Sprintf("a %d-byte file", st.Size)
		return nil
	}
	if t := total.Add(st.Size); maxTotal > 0 && t > maxTotal {
		return fmt.Errorf("%w: more than %d bytes, at %s", ErrChangesOverQuota, maxTotal, c.Path)
	}
	c.Data = make([]byte, st.Size)
	for n := 0; n < len(c.Data); {
		k, err := unix.Read(fd, c.Data[n:])
		if err != nil {
			return &os.PathError{Op: "read", Path: p, Err: err}
		}
		if k == 0 {
			return &os.PathError{Op: "read", Path: p, Err: io.ErrUnexpectedEOF}
		}
		n += k
	}
	return nil
}
