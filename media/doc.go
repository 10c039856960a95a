// Package media turns uploaded images into the renditions the chat API
// serves. It is a set of pure functions over bytes: it knows nothing of
// stores or HTTP, and it is safe for concurrent use.
//
// # What it does
//
// [Process] (or [ProcessBytes]) reads one JPEG, PNG, GIF or WebP image and
// returns three renditions, small, medium and large, which fit within 160,
// 600 and 1500 pixels on their longest side (see [Sizes]), plus "full" at the
// original dimensions when [Options.KeepFull] is set. An image is never
// enlarged: when it is smaller than a size, that rendition has the original
// dimensions. Only the first frame of an animated GIF is used; a first frame
// that covers only part of the GIF's screen is placed on a transparent
// canvas of the screen's size. Animated WebP is not supported.
//
// Every rendition is oriented according to the image's EXIF Orientation tag
// (all eight values), read from a JPEG's APP1 Exif segment, a PNG's eXIf
// chunk or a WebP's EXIF chunk, so a portrait photo that a phone stored
// sideways comes out upright; [Result.Width] and [Result.Height] are the
// oriented dimensions.
//
// # Output format and metadata
//
// Renditions are baseline JPEG with 4:2:0 chroma subsampling at quality 85
// by default ([Options.JPEGQuality]), a common choice for photographs on
// the web whose artefacts are hard to see at normal viewing size. If any pixel of the image is not fully opaque, every rendition
// is PNG instead, so transparency survives. Grayscale JPEGs stay grayscale.
// Because every rendition is re-encoded from pixels, nothing else of the
// input survives: no EXIF (including GPS position), XMP, IPTC, comments or
// text chunks. Embedded ICC colour profiles are dropped too, so the pixels
// are interpreted as sRGB; a photo tagged with a wide-gamut profile (such as
// Display P3) looks slightly less saturated than in a colour-managed viewer.
//
// # Limits
//
// Input is bounded three times. [Options.MaxBytes] (50 MiB by default)
// bounds the bytes read. [Options.MaxPixels] (50 million by default) bounds
// width × height, and [Options.MaxDecodedBytes] (256 MiB by default) bounds
// the memory of the decoded pixels, which depends on the bytes each pixel
// takes: 1.5 for a 4:2:0 JPEG, 4 for an 8-bit RGBA PNG, 8 for a 16-bit one
// (see [Header.DecodedBytes]). Both are enforced from the image header,
// before any pixel is decoded or any pixel buffer allocated: a 100-byte
// file claiming 100000×100000 pixels is refused in microseconds, and so is
// a 400 KB 16-bit PNG of 7000×7000 pixels that would take 392 MB decoded.
// [ReadHeader] makes these checks alone and returns [Header.Memory], an
// estimate of the memory processing the image takes, with which a caller
// can bound the images processed at once. The limits fail with
// [ErrTooLarge]; input that is not a decodable JPEG, PNG, GIF or WebP,
// including truncated or corrupt files, fails with [ErrNotImage]. HTTP
// handlers map them to 413 and 415.
//
// A 12-megapixel photo is processed in about 41 MiB of peak resident
// memory.
//
// # Resizing and filters
//
// Each rendition is made from the next larger one: large from the decoded
// image, medium from large and small from medium, so the costly filtering
// of the full image happens once.
//
// Every image is decoded at full size, JPEG by the standard library's
// image/jpeg. A decoded image held as Y'CbCr or Gray planes (JPEG, and
// lossy WebP without alpha) whose longest side is at least twice 1500
// pixels is then reduced to 1/2, 1/4 or 1/8 of its size,
// the largest reduction that still leaves at least 1500 pixels on the
// longest side, by averaging each 2×2, 4×4 or 8×8 block of every plane (a
// box filter). That is one cheap pass, and it leaves the costlier filter
// below a quarter of the pixels or fewer. When the full rendition is
// requested nothing is reduced.
//
// The filters are chosen per size:
//
//   - large: Lanczos (3 lobes) from the decoded image. This is the biggest
//     rendition, most likely to be viewed at 1:1, and Lanczos keeps fine
//     detail sharp without visible ringing. After the box reduction it
//     usually scales by less than 2, so it stays cheap. Against a Lanczos
//     resize of the whole decoded image, a 3200×2400 photo's large
//     rendition made through the box reduction measured 44.2 dB PSNR, a
//     smaller change than encoding it at quality 85 makes (41.4 dB).
//   - medium: Catmull-Rom (bicubic) from large. At a factor of 2.5 it
//     matched Lanczos within 0.1 dB in our measurements, at two thirds of
//     the cost.
//   - small: Lanczos from medium. Thumbnails are where softness shows most;
//     Lanczos measured 1.5 dB closer to the reference than Catmull-Rom, and
//     the image is tiny, so the cost does not matter.
//
// Filters widen with the scale factor, so they also act as the anti-aliasing
// low-pass filter. Filtering happens on the gamma-encoded values, as in most
// image tools.
//
// # Performance
//
// JPEG and lossy WebP images decode to Y'CbCr planes, and they are resized
// and rotated as planes, without conversion to RGBA: Y'CbCr is an affine
// function of R'G'B', so filtering the planes equals filtering RGB, while a
// 4:2:0 image has half the samples of RGB and the JPEG encoder reads Y'CbCr
// directly. Filters use 14-bit fixed-point weights. Orientation is applied
// to the large rendition after resizing, the smallest point at which it can
// be. Resizes split their rows over all cores, and each rendition is encoded
// in its own goroutine while the next smaller one is being made, so both
// cores of a small server are busy. Encoding buffers are recycled through
// sync.Pool. Other images (PNG, GIF, lossless WebP and any image with
// transparency) are resized by github.com/disintegration/imaging in NRGBA
// with alpha-weighted filtering.
//
// On a shared two-core machine a 4000×3000 photo JPEG yielded its three
// renditions with 0.55 s of CPU time (median wall time 2.0 s under a load
// average of 11 to 19) and a peak resident set of 41,568 KiB, against
// 0.96 s of CPU (3.7 s wall) and 53,876 KiB for three runs of libvips'
// vipsthumbnail measured in the same run. media/bench.sh reproduces the
// comparison and docs/benchmarks.md has the measurements. Progressive JPEGs
// are several times slower to decode than baseline ones and need memory for
// all their DCT coefficients (2 bytes per coefficient).
package media
