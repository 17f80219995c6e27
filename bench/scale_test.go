package bench

import (
	"compress/gzip"

	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

// scaleSizes are the backups the scale benchmarks read: 100k and a million objects.
var scaleSizes = []int{100_000, 1_000_000}

// appsTarball returns the path of a generated backup of n application objects (with
// its manifest first when carried), made once and kept in the user's cache directory:
// a million objects take a minute to write.
func appsTarball(b *testing.B, n int, carried bool) string {
	b.Helper()
	if carried {
		return cachedBackup(b, fmt.Sprintf("apps-%d-manifest-v1.tar.gz", n), withManifest(appsTarball(b, n, false)))
	}
	return cachedBackup(b, fmt.Sprintf("apps-%d-plain-v1.tar.gz", n), func(w io.Writer) error {
		_, err := workload.WriteApps(w, n, 1)
		return err
	})
}

// cachedBackup returns the path of the backup file name in restoregraph/bench under
// the user's cache directory, written by write the first time it is asked for.
func cachedBackup(b *testing.B, name string, write func(io.Writer) error) string {
	b.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	dir = filepath.Join(dir, "restoregraph", "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp, err := os.CreateTemp(dir, "writing-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		b.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// withManifest writes the backup file at plain again with its manifest first.
func withManifest(plain string) func(io.Writer) error {
	return func(w io.Writer) error {
		src, err := archive.ReadFile(context.Background(), plain, archive.Options{})
		if err != nil {
			return err
		}
		defer src.Close()
		return workload.WithManifest(w, src)
	}
}

// inflate decompresses the file at path to nowhere, in this process.
func inflate(b *testing.B, path string, newReader func(io.Reader) (io.Reader, error)) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := newReader(f)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		b.Fatal(err)
	}
}

// The two inflaters compared: Go's compress/gzip, and klauspost/compress's, which the
// archive reads with.
var (
	goGzip        = func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }
	klauspostGzip = func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) }
)

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// retainedMiB is the heap that stays in use while keep is alive, after a collection.
func retainedMiB(before runtime.MemStats, keep any) float64 {
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
}

// BenchmarkRead reads a Velero tarball without a manifest (every body is read for its
// metadata) of 100k and a million objects, and in the same iteration decompresses the
// same file three times: with Go's compress/gzip to nowhere, with klauspost/compress's
// gzip (which the archive reads with) to nowhere, and with gzip -dc (the gunzip
// command) when there is one. ns/op is the read alone; read/gunzip, read/kgunzip and
// read/gzip-dc are its ratios to them, and retained-MiB the heap the read backup keeps.
func BenchmarkRead(b *testing.B) {
	gzipCmd, _ := exec.LookPath("gzip")
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			path := appsTarball(b, n, false)
			var read, gunzip, kgunzip, gzipDC time.Duration
			var retained float64
			for b.Loop() {
				b.StopTimer()
				gunzip += timed(func() { inflate(b, path, goGzip) })
				kgunzip += timed(func() { inflate(b, path, klauspostGzip) })
				if gzipCmd != "" {
					gzipDC += timed(func() {
						if err := exec.Command(gzipCmd, "-dc", path).Run(); err != nil {
							b.Fatal(err)
						}
					})
				}
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				var backup *archive.Backup
				b.StartTimer()
				read += timed(func() {
					var err error
					if backup, err = archive.ReadFile(context.Background(), path, archive.Options{}); err != nil {
						b.Fatal(err)
					}
				})
				b.StopTimer()
				if backup.Manifest().Len() < n {
					b.Fatalf("%d objects read of %d", backup.Manifest().Len(), n)
				}
				retained = retainedMiB(before, backup)
				backup.Close()
				b.StartTimer()
			}
			b.ReportMetric(read.Seconds()/gunzip.Seconds(), "read/gunzip")
			b.ReportMetric(read.Seconds()/kgunzip.Seconds(), "read/kgunzip")
			if gzipCmd != "" {
				b.ReportMetric(read.Seconds()/gzipDC.Seconds(), "read/gzip-dc")
			}
			b.ReportMetric(retained, "retained-MiB")
		})
	}
}

// BenchmarkPlanFromManifest plans the restore of a backup that carries its manifest,
// against the embedded API server: the manifest is read, the bodies never are.
func BenchmarkPlanFromManifest(b *testing.B) {
	s, err := memcluster.StartServer(memcluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tgt, err := restore.NewTarget(s.Config())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			path := appsTarball(b, n, true)
			var retained float64
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				backup, err := archive.ReadFile(context.Background(), path, archive.Options{})
				if err != nil {
					b.Fatal(err)
				}
				plan, err := restore.NewPlan(context.Background(), backup, tgt, restore.PlanOptions{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if plan.Len() < n {
					b.Fatalf("%d objects planned of %d", plan.Len(), n)
				}
				retained = retainedMiB(before, plan)
				backup.Close()
				b.StartTimer()
			}
			b.ReportMetric(retained, "retained-MiB")
		})
	}
}
