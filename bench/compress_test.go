package bench

import (
	"context"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/restoregraph/restoregraph/archive"
)

// BenchmarkBodyCompression compresses the bodies of the 100k application backup one at
// a time, as the embedded server's store keeps objects: with s2 against a dictionary
// made of the first 64 KiB of bodies of the same resource, and with s2 alone. It
// reports the compressed size as a fraction of the bodies', each way, and the
// dictionary's speed on one core.
func BenchmarkBodyCompression(b *testing.B) {
	backup, err := archive.ReadFile(context.Background(), appsTarball(b, 100_000, false), archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer backup.Close()
	byResource := map[string][][]byte{}
	for _, it := range backup.Manifest().Items() {
		body, err := backup.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			b.Fatal(err)
		}
		k := it.GroupResource().String()
		byResource[k] = append(byResource[k], body)
	}
	var raw, withDict, alone int
	var took time.Duration
	for b.Loop() {
		raw, withDict, alone, took = 0, 0, 0, 0
		for _, bodies := range byResource {
			var sample []byte
			k := 0
			for ; k < len(bodies) && len(sample) < s2.MaxDictSize; k++ {
				sample = append(sample, bodies[k]...)
			}
			dict := s2.MakeDict(sample, []byte(`{"apiVersion":`))
			if dict == nil {
				continue // too few bodies for a dictionary
			}
			var dst []byte
			start := time.Now()
			for _, body := range bodies[k:] {
				dst = dict.Encode(dst[:cap(dst)], body)
				raw, withDict = raw+len(body), withDict+len(dst)
			}
			took += time.Since(start)
			for _, body := range bodies[k:] {
				alone += len(s2.Encode(dst[:cap(dst)], body))
			}
		}
	}
	b.ReportMetric(float64(withDict)/float64(raw), "dict-ratio")
	b.ReportMetric(float64(alone)/float64(raw), "alone-ratio")
	b.ReportMetric(float64(raw)/took.Seconds()/1e6, "dict-MB/s")
}
