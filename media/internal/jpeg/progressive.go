// This file is not part of the upstream image/jpeg package.

package jpeg

// progBlock holds one block's coefficients between progressive scans.
type progBlock [blockSize]int16

func (p *progBlock) load() (b block) {
	for i, v := range p {
		b[i] = int32(v)
	}
	return b
}

func (p *progBlock) store(b *block) {
	for i, v := range b {
		p[i] = int16(v)
	}
}
