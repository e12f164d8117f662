package transfer

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"math/bits"
)

// packDeflater writes zlib streams for pack entries: greedy LZ77 in the
// manner of zlib's level 1, coded with deflate's fixed Huffman codes.
//
// It exists for the receiving git, whose single-threaded first pass over
// a pack without deltas (index-pack) inflates every byte we send. Go's
// compressors (the standard library's and klauspost's, at every level)
// code a run of one byte as matches at distance 1, which zlib's inflate
// copies a byte at a time, each byte waiting on the store of the one
// before: on a push of 10,000 small files with runs in them that copy
// was a third of index-pack's time. zlib's own deflate does not add the
// positions inside a long match to its hash table, so the next match of
// a run reaches back past it, and inflate copies from bytes written long
// before. Fixed codes spare us a Huffman tree per object (most of a
// small object's cost in Go's deflate), and spare inflate building its
// tables per object; a pack made between two processes on one machine
// need not be the smallest one.
type packDeflater struct {
	// table maps a hash of 4 bytes to where they were last seen, as a
	// position in everything this deflater has read (base + offset), so
	// that a new object needs no clearing: entries below its base are
	// stale.
	table [1 << dfHashBits]uint32
	base  uint32
	// bit writer
	acc  uint64
	nacc uint
	out  *bytes.Buffer
}

const (
	dfHashBits  = 14
	dfMinMatch  = 4
	dfMaxMatch  = 258
	dfMaxDist   = 32768
	dfStoredMax = 65535
	// Positions inside a match longer than this are not hashed (zlib's
	// max_insert_length at level 1).
	dfMaxInsert = 4
	// Larger objects go stored: positions in the table are 32 bits.
	dfMaxObject = 1 << 30
)

// Fixed Huffman codes (RFC 1951, 3.2.6), bit-reversed for the LSB-first
// stream, and the length and distance code tables.
var (
	dfLitCode [288]uint16
	dfLitLen  [288]uint8
	dfDstCode [30]uint16

	dfLenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	dfLenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	dfDstBase  = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	dfDstExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

	// dfLenSym[l-3] is the length code (0-based, past 257) of length l.
	dfLenSym [dfMaxMatch - 2]uint8
	// dfDstSym[d-1] for d <= 256, dfDstSym[256+(d-1)>>7] above.
	dfDstSym [512]uint8
)

func init() {
	rev := func(code uint16, n uint8) uint16 { return bits.Reverse16(code) >> (16 - n) }
	for v := 0; v < 288; v++ {
		switch {
		case v < 144:
			dfLitCode[v], dfLitLen[v] = rev(uint16(0x30+v), 8), 8
		case v < 256:
			dfLitCode[v], dfLitLen[v] = rev(uint16(0x190+v-144), 9), 9
		case v < 280:
			dfLitCode[v], dfLitLen[v] = rev(uint16(v-256), 7), 7
		default:
			dfLitCode[v], dfLitLen[v] = rev(uint16(0xc0+v-280), 8), 8
		}
	}
	for d := range dfDstCode {
		dfDstCode[d] = rev(uint16(d), 5)
	}
	for c := range dfLenBase {
		end := dfMaxMatch + 1
		if c+1 < len(dfLenBase) {
			end = int(dfLenBase[c+1])
		}
		for l := int(dfLenBase[c]); l < end; l++ {
			dfLenSym[l-3] = uint8(c)
		}
	}
	for c := range dfDstBase {
		end := dfMaxDist + 1
		if c+1 < len(dfDstBase) {
			end = int(dfDstBase[c+1])
		}
		for d := int(dfDstBase[c]); d < end; d++ {
			if d <= 256 {
				dfDstSym[d-1] = uint8(c)
			} else {
				dfDstSym[256+(d-1)>>7] = uint8(c)
			}
		}
	}
}

func (z *packDeflater) bits(v uint64, n uint) {
	z.acc |= v << z.nacc
	z.nacc += n
	if z.nacc >= 48 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], z.acc)
		z.out.Write(b[:6])
		z.acc >>= 48
		z.nacc -= 48
	}
}

func (z *packDeflater) flushBits() {
	for z.nacc > 0 {
		z.out.WriteByte(byte(z.acc))
		z.acc >>= 8
		z.nacc -= min(z.nacc, 8)
	}
	z.acc, z.nacc = 0, 0
}

func (z *packDeflater) lit(b byte) {
	z.bits(uint64(dfLitCode[b]), uint(dfLitLen[b]))
}

func (z *packDeflater) match(length, dist int) {
	lc := dfLenSym[length-3]
	sym := 257 + int(lc)
	z.bits(uint64(dfLitCode[sym]), uint(dfLitLen[sym]))
	if e := dfLenExtra[lc]; e > 0 {
		z.bits(uint64(length-int(dfLenBase[lc])), uint(e))
	}
	var dc uint8
	if dist <= 256 {
		dc = dfDstSym[dist-1]
	} else {
		dc = dfDstSym[256+(dist-1)>>7]
	}
	z.bits(uint64(dfDstCode[dc]), 5)
	if e := dfDstExtra[dc]; e > 0 {
		z.bits(uint64(dist-int(dfDstBase[dc])), uint(e))
	}
}

// matchLen is how many bytes a and b have in common at their start; a is
// at least as long as b.
func matchLen(a, b []byte) int {
	n := 0
	for len(b)-n >= 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func dfHash(u uint32) uint32 {
	return (u * 0x1e35a7bd) >> (32 - dfHashBits)
}

// compress appends data to out as a zlib stream.
func (z *packDeflater) compress(out *bytes.Buffer, data []byte) {
	z.out = out
	start := out.Len()
	out.Write([]byte{0x78, 0x01}) // deflate, 32 KiB window, fastest
	n := len(data)
	if n > dfMaxObject {
		// Too big for the table's positions: stored.
		z.stored(out, start, data)
		return
	}
	if z.base > 1<<31 {
		clear(z.table[:])
		z.base = 0
	}
	base := z.base + dfMaxDist + 1 // nothing older is in reach
	z.base = base + uint32(n)
	z.bits(0b011, 3) // final block, fixed codes
	i := 0
	for i+dfMinMatch <= n {
		cur := binary.LittleEndian.Uint32(data[i:])
		h := dfHash(cur)
		cand := int(z.table[h]) - int(base)
		z.table[h] = base + uint32(i)
		if cand < 0 || i-cand > dfMaxDist || binary.LittleEndian.Uint32(data[cand:]) != cur {
			z.lit(data[i])
			i++
			continue
		}
		l := dfMinMatch + matchLen(data[cand+dfMinMatch:], data[i+dfMinMatch:min(n, i+dfMaxMatch)])
		z.match(l, i-cand)
		if l <= dfMaxInsert {
			for j := i + 1; j < i+l && j+dfMinMatch <= n; j++ {
				z.table[dfHash(binary.LittleEndian.Uint32(data[j:]))] = base + uint32(j)
			}
		}
		i += l
	}
	for ; i < n; i++ {
		z.lit(data[i])
	}
	z.bits(uint64(dfLitCode[256]), uint(dfLitLen[256]))
	z.flushBits()
	// What does not shrink is sent as it is, in stored blocks: fixed
	// codes would make it larger by up to an eighth.
	if stored := 2 + n + 5*max(1, (n+dfStoredMax-1)/dfStoredMax); out.Len()-start > stored {
		z.stored(out, start, data)
		return
	}
	z.adler(data)
}

// stored replaces what was written since start with data in stored
// blocks, as a whole zlib stream.
func (z *packDeflater) stored(out *bytes.Buffer, start int, data []byte) {
	out.Truncate(start)
	out.Write([]byte{0x78, 0x01})
	n := len(data)
	for off := 0; ; {
		m := min(n-off, dfStoredMax)
		final := byte(0)
		if off+m == n {
			final = 1
		}
		out.Write([]byte{final, byte(m), byte(m >> 8), ^byte(m), ^byte(m >> 8)})
		out.Write(data[off : off+m])
		if off += m; off == n {
			break
		}
	}
	z.adler(data)
}

func (z *packDeflater) adler(data []byte) {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], adler32.Checksum(data))
	z.out.Write(sum[:])
}
