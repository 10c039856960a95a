// Command mediabench runs media.Process on one file, for timing with
// hyperfine and measuring peak memory with /usr/bin/time -v. See
// media/bench.sh.
//
// Usage:
//
//	mediabench [-out DIR] [-full] [-n N] FILE   process FILE (N times)
//	mediabench -gen FILE [-w 4000 -h 3000]      write a photo-like JPEG
//	mediabench -gen FILE -format png16 [-w -h]  write a 16-bit RGBA PNG
//	mediabench -gen FILE -format png8 [-w -h]   write an 8-bit RGBA PNG
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chatengine/chat/media"
	"github.com/chatengine/chat/media/internal/testimg"
)

func main() {
	var (
		gen     = flag.String("gen", "", "write a deterministic photo-like JPEG to this file and exit")
		w       = flag.Int("w", 4000, "width of the -gen image")
		h       = flag.Int("h", 3000, "height of the -gen image")
		orient  = flag.Int("orientation", 6, "EXIF orientation of the -gen image (0 for no EXIF)")
		format  = flag.String("format", "jpeg", "format of the -gen image: jpeg (photo-like), png16 (16-bit RGBA gradients) or png8 (8-bit RGBA gradients)")
		out     = flag.String("out", "", "write the renditions into this directory")
		full    = flag.Bool("full", false, "also make the full rendition")
		n       = flag.Int("n", 1, "process the file this many times")
		verbose = flag.Bool("v", false, "print the renditions and the time taken")
	)
	flag.Parse()
	if *gen != "" {
		var b []byte
		switch *format {
		case "jpeg":
			b = testimg.PhotoJPEG(*w, *h, 1, 92, *orient)
		case "png16", "png8":
			var img image.Image = testimg.Deep(*w, *h)
			if *format == "png8" {
				img = testimg.Translucent(*w, *h)
			}
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				fail(err)
			}
			b = buf.Bytes()
		default:
			fail(fmt.Errorf("unknown -format %q", *format))
		}
		if err := os.WriteFile(*gen, b, 0o644); err != nil {
			fail(err)
		}
		return
	}
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	for i := 0; i < *n; i++ {
		start := time.Now()
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fail(err)
		}
		res, err := media.Process(f, media.Options{KeepFull: *full})
		f.Close()
		if err != nil {
			fail(err)
		}
		if *verbose {
			fmt.Printf("%s %dx%d in %v\n", res.SourceMIME, res.Width, res.Height, time.Since(start))
		}
		for _, r := range res.Renditions {
			if *verbose {
				fmt.Printf("  %-6s %s %dx%d %d bytes\n", r.Name, r.ContentType, r.Width, r.Height, len(r.Data))
			}
			if *out != "" {
				ext := strings.TrimPrefix(r.ContentType, "image/")
				if err := os.WriteFile(filepath.Join(*out, r.Name+"."+ext), r.Data, 0o644); err != nil {
					fail(err)
				}
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mediabench:", err)
	os.Exit(1)
}
