// This file is not part of the upstream image/jpeg package.

package jpeg

import (
	"runtime"
	"sync"
)

// For large sequential (baseline) images, the inverse DCT and the storing
// of pixels run on a second goroutine while the entropy decoder, which is
// inherently serial, carries on with the next blocks. Blocks are handed over
// in batches; the batches are recycled.

const (
	pipelineBatch    = 512     // Blocks per batch (128 KiB).
	pipelineMinBlock = 4 << 10 // Images with fewer blocks are not worth it.
)

type blockPos struct {
	bx, by int32
	comp   int8
}

type batch struct {
	blocks [pipelineBatch]block
	pos    [pipelineBatch]blockPos
	n      int
}

// reconPipeline runs reconstructBlock on a worker goroutine.
type reconPipeline struct {
	d    *decoder
	cur  *batch
	work chan *batch
	free chan *batch
	wg   sync.WaitGroup
}

// newReconPipeline returns a pipeline for a scan of nBlocks blocks, or nil
// when the scan should reconstruct blocks inline.
func newReconPipeline(d *decoder, nBlocks int) *reconPipeline {
	if nBlocks < pipelineMinBlock || runtime.GOMAXPROCS(0) < 2 {
		return nil
	}
	p := &reconPipeline{
		d:    d,
		work: make(chan *batch, 2),
		free: make(chan *batch, 3),
	}
	for i := 0; i < 3; i++ {
		p.free <- new(batch)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for bt := range p.work {
			for i := 0; i < bt.n; i++ {
				pos := bt.pos[i]
				// reconstructBlock fails only for a component index above 3,
				// which processSOF rules out.
				_ = d.reconstructBlock(&bt.blocks[i], int(pos.bx), int(pos.by), int(pos.comp))
			}
			bt.n = 0
			p.free <- bt
		}
	}()
	p.cur = <-p.free
	return p
}

// add queues one block.
func (p *reconPipeline) add(b *block, bx, by, comp int) {
	bt := p.cur
	bt.blocks[bt.n] = *b
	bt.pos[bt.n] = blockPos{int32(bx), int32(by), int8(comp)}
	bt.n++
	if bt.n == pipelineBatch {
		p.work <- bt
		p.cur = <-p.free
	}
}

// finish reconstructs the remaining blocks and waits for the worker. It
// must be called exactly once, on success and failure alike.
func (p *reconPipeline) finish() {
	if p.cur.n > 0 {
		p.work <- p.cur
	}
	close(p.work)
	p.wg.Wait()
}
