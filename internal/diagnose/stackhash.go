package diagnose

import (
	"hash/maphash"

	"github.com/google/pprof/profile"
)

// stackHasher names the stacks of one profile by their frames without
// spelling them out: a stack's hash is a polynomial over its frames'
// hashes (function, file, line, innermost first, inlined calls
// expanded), so two profiles of one process give a stack the same hash
// whatever their location IDs, and each location is hashed once however
// many stacks pass through it. The checks that compare stacks across
// snapshots key them by it, and spell a stack out (frames, stackKey)
// only the first time they see it.
type stackHasher struct {
	seed maphash.Seed
	locs map[*profile.Location]polyHash
}

// polyHash is the hash of a sequence of frames and the multiplier that
// shifts it past them: h(a‖b) = h(a)·mul(b) + h(b).
type polyHash struct{ h, mul uint64 }

// stackPrime is the polynomial's base: odd, so multiplying by it loses
// nothing modulo 2⁶⁴.
const stackPrime = 0x100000001b3

// newStackHasher returns a hasher whose hashes compare across the
// profiles it is given.
func newStackHasher() *stackHasher {
	return &stackHasher{seed: maphash.MakeSeed(), locs: map[*profile.Location]polyHash{}}
}

// stack returns the hash of a sample's stack.
func (sh *stackHasher) stack(s *profile.Sample) uint64 {
	var h uint64
	for _, loc := range s.Location {
		lh, ok := sh.locs[loc]
		if !ok {
			lh = sh.location(loc)
			sh.locs[loc] = lh
		}
		h = h*lh.mul + lh.h
	}
	return h
}

// location hashes a location's lines in frames' order.
func (sh *stackHasher) location(loc *profile.Location) polyHash {
	out := polyHash{mul: 1}
	var mh maphash.Hash
	mh.SetSeed(sh.seed)
	for _, ln := range loc.Line {
		mh.Reset()
		if ln.Function != nil {
			mh.WriteString(ln.Function.Name)
			mh.WriteByte(0)
			mh.WriteString(ln.Function.Filename)
		}
		mh.WriteByte(0)
		var b [8]byte
		for i := range b {
			b[i] = byte(ln.Line >> (8 * i))
		}
		mh.Write(b[:])
		out.h = out.h*stackPrime + mh.Sum64()
		out.mul *= stackPrime
	}
	return out
}
