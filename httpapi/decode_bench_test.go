package httpapi

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkDecodeJSON measures the decoding of a message body: plain text,
// and text with an emoji written as an escaped surrogate pair (as
// encoders that escape non-ASCII send it), which also goes through the
// surrogate check.
func BenchmarkDecodeJSON(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"plain", `{"channelId":"general","type":"text","data":{"text":"Hello, world! See you at the meeting tomorrow at ten."},"tags":["greeting"]}`},
		{"escaped-pair", `{"channelId":"general","type":"text","data":{"text":"Hello, world! \ud83d\ude00 See you at the meeting tomorrow at ten."},"tags":["greeting"]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := decodeJSON(body); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time per decode: steadier than ns/op on a busy machine.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
