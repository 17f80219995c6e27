package archive

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/internal/strslab"
)

// walked is what a walk of a tarball gives: each regular file's names and bytes, then
// how it ended.
type walked struct {
	files []string
	end   string
}

func walk(data []byte, opts Options) walked {
	var w walked
	e, err := newEntries(bytes.NewReader(data), opts.withDefaults())
	if err != nil {
		return walked{end: err.Error()}
	}
	defer e.close()
	for {
		name, raw, body, err := e.next()
		if err != nil {
			w.end = err.Error()
			return w
		}
		w.files = append(w.files, fmt.Sprintf("%s (%s): %q", name, raw, body))
	}
}

// walkTar walks data with archive/tar alone, under the same rules: what entries reads
// must be what archive/tar reads.
func walkTar(data []byte, opts Options) walked {
	var w walked
	opts = opts.withDefaults()
	e, err := newEntries(bytes.NewReader(data), opts)
	if err != nil {
		return walked{end: err.Error()}
	}
	defer e.close()
	tr := tar.NewReader(e.r)
	var count, total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			w.end = io.EOF.Error()
			return w
		}
		if err != nil {
			w.end = (&EntryError{Path: "(tar stream)", Err: err}).Error()
			return w
		}
		typeflag := hdr.Typeflag
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				typeflag = tar.TypeGNUSparse
			}
		}
		name, err := entryName(typeflag, hdr.Name)
		if err != nil {
			w.end = (&EntryError{Path: hdr.Name, Err: err}).Error()
			return w
		}
		if count++; count > opts.MaxEntries {
			w.end = (&LimitError{Path: hdr.Name, Limit: LimitEntries, Max: opts.MaxEntries}).Error()
			return w
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if limit, what := opts.entryLimit(name); hdr.Size > limit {
			w.end = (&LimitError{Path: hdr.Name, Limit: what, Max: limit}).Error()
			return w
		}
		if total += hdr.Size; total > opts.MaxTotalBytes {
			w.end = (&LimitError{Path: hdr.Name, Limit: LimitTotalSize, Max: opts.MaxTotalBytes}).Error()
			return w
		}
		body := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, body); err != nil {
			w.end = (&EntryError{Path: hdr.Name, Err: err}).Error()
			return w
		}
		w.files = append(w.files, fmt.Sprintf("%s (%s): %q", name, hdr.Name, body))
	}
}

// tarballs are tarballs as archive/tar's Writer writes them in each of its formats,
// with names long enough to need a prefix, a PAX record or a GNU long name, and the
// same tarballs cut short.
func tarballs(t testing.TB) [][]byte {
	long := "resources/deployments.apps/v1-preferredversion/namespaces/" + strings.Repeat("a", 63) + "/" + strings.Repeat("b", 63) + ".json"
	var out [][]byte
	for _, format := range []tar.Format{tar.FormatUnknown, tar.FormatUSTAR, tar.FormatPAX, tar.FormatGNU} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range []*tar.Header{
			{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "metadata/version", Typeflag: tar.TypeReg, Size: 5},
			{Name: long, Typeflag: tar.TypeReg, Size: 2},
			{Name: "resources/pods/namespaces/n/é.json", Typeflag: tar.TypeReg, Size: 3},
			{Name: "resources/pods/namespaces/n/empty.json", Typeflag: tar.TypeReg},
			{Name: "resources/pods/namespaces/n/big.json", Typeflag: tar.TypeReg, Size: 1000, ModTime: time.Unix(1<<40, 0)},
		} {
			h.Format = format
			if err := tw.WriteHeader(h); err != nil {
				if format != tar.FormatUnknown {
					continue // a name this format cannot hold
				}
				t.Fatal(err)
			}
			tw.Write(bytes.Repeat([]byte{'x'}, int(h.Size)))
		}
		tw.Close()
		data := buf.Bytes()
		out = append(out, data, data[:len(data)-1024], data[:len(data)-1500], data[:700], data[:512])
	}
	return out
}

func TestEntriesReadWhatArchiveTarReads(t *testing.T) {
	for i, data := range tarballs(t) {
		want := walkTar(data, Options{})
		assert.Equal(t, want, walk(data, Options{}), "tarball %d", i)
		// A damaged header is archive/tar's to judge.
		for _, at := range []int{0, 100, 124, 148, 156, 257, 345, 508} {
			bad := bytes.Clone(data)
			bad[at] ^= 0x5a
			assert.Equal(t, walkTar(bad, Options{}), walk(bad, Options{}), "tarball %d, byte %d changed", i, at)
		}
	}
	// The fast path does read what archive/tar's Writer writes for a backup.
	w := walk(tarballs(t)[0], Options{})
	require.Equal(t, io.EOF.Error(), w.end)
	assert.Len(t, w.files, 5)
}

func TestEntriesRefuseSparseFiles(t *testing.T) {
	// archive/tar's Writer writes no GNU.sparse record: one of the same length is
	// written and then renamed in the PAX header's data.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "resources/a.json", Typeflag: tar.TypeReg, Size: 2,
		PAXRecords: map[string]string{"SCHILY.xattr.abc": "1"}, Format: tar.FormatPAX}))
	tw.Write([]byte("{}"))
	tw.Close()
	data := bytes.Replace(buf.Bytes(), []byte("SCHILY.xattr.abc"), []byte("GNU.sparse.major"), 1)
	require.NotEqual(t, buf.Bytes(), data)
	w := walk(data, Options{})
	assert.Empty(t, w.files)
	assert.Contains(t, w.end, ErrUnsafeEntry.Error())
	assert.Equal(t, walkTar(data, Options{}), w)
}

func FuzzEntries(f *testing.F) {
	for _, data := range tarballs(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{MaxEntryBytes: 1 << 16, MaxTotalBytes: 1 << 20, MaxEntries: 1000}
		want, got := walkTar(data, opts), walk(data, opts)
		if len(want.files) != len(got.files) || want.end != got.end {
			t.Fatalf("archive/tar read %v,\nentries read %v", want, got)
		}
		for i := range want.files {
			if want.files[i] != got.files[i] {
				t.Fatalf("file %d: archive/tar read %s, entries %s", i, want.files[i], got.files[i])
			}
		}
	})
}

// The headers archive/tar's Writer writes for a backup's entries, a name of up to 255
// bytes split between name and prefix, are read without archive/tar.
func TestPlainHeaderReadsTheWritersHeaders(t *testing.T) {
	for _, h := range []*tar.Header{
		{Name: "metadata/version", Typeflag: tar.TypeReg, Size: 5, Mode: 0o644, ModTime: time.Unix(1764000000, 0)},
		{Name: "resources/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "resources/deployments.apps/v1-preferredversion/namespaces/" + strings.Repeat("a", 63) + "/" + strings.Repeat("b", 63) + ".json", Typeflag: tar.TypeReg, Size: 1 << 20},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		require.NoError(t, tw.WriteHeader(h))
		require.Equal(t, blockSize, buf.Len(), "%s: one block", h.Name)
		got, ok := plainHeader(buf.Bytes(), strslab.New(0))
		require.True(t, ok, h.Name)
		assert.Equal(t, header{name: h.Name, typeflag: h.Typeflag, size: h.Size}, got)
	}
	// A PAX header, for a name no ustar header holds, is archive/tar's to read.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: strings.Repeat("a", 300), Typeflag: tar.TypeReg}))
	_, ok := plainHeader(buf.Bytes()[:blockSize], strslab.New(0))
	assert.False(t, ok)
}

func TestChecksumAddsTheBytes(t *testing.T) {
	blk := make([]byte, blockSize)
	for _, fill := range []func(i int) byte{
		func(int) byte { return 0xff },
		func(i int) byte { return byte(i * 7) },
		func(int) byte { return 0 },
	} {
		want := int64(0)
		for i := range blk {
			blk[i] = fill(i)
			if i >= 148 && i < 156 {
				want += ' '
			} else {
				want += int64(blk[i])
			}
		}
		assert.Equal(t, want, checksum(blk))
	}
}

// plainNameCases are names plainName must judge as localClean does.
var plainNameCases = []string{
	"resources/pods/namespaces/team-00001/web-7d4b9c-x2x9z.json",
	"resources/deployments.apps/v1-preferredversion/namespaces/a/b.json",
	"metadata/version", "a", "...", ".a", "a.", "a..b", "a/...", "a_b-C.9",
	"", ".", "..", "/", "/a", "a/", "a//b", "a/./b", "a/../b", "../a", "a/..", "./a",
	"a\\b", "a\x00b", "a b", "é", "a/.", "..a/b", "a/b../c",
}

// TestPlainNameIsLocalClean: the walk's fast check of an entry's name says what
// filepath.IsLocal and path.Clean say, wherever it says anything: a name it passes is
// local and clean, and a name of its alphabet it refuses is not (but ".", the root, which
// localClean passes).
func TestPlainNameIsLocalClean(t *testing.T) {
	for _, name := range plainNameCases {
		checkPlainName(t, name)
	}
	assert.True(t, plainName(plainNameCases[0]), "a backup's entry name is judged without filepath")
}

func FuzzPlainName(f *testing.F) {
	for _, name := range plainNameCases {
		f.Add(name)
	}
	f.Fuzz(checkPlainName)
}

func checkPlainName(t *testing.T, name string) {
	want := localClean(name)
	if plainName(name) && !want {
		t.Fatalf("plainName(%q) passes a name that is not local and clean", name)
	}
	alphabet := strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == ""
	if alphabet && name != "." && plainName(name) != want {
		t.Fatalf("plainName(%q) = %v, localClean %v", name, plainName(name), want)
	}
}

// plainOctalCases are numeric fields plainOctal must judge as octal does.
var plainOctalCases = []string{
	"0000644\x00", "0000000\x00", "\x00\x00\x00\x00\x00\x00\x00\x00", "15137331200\x00", "00000001234\x00",
	"07777777", "777777777777", "0", "", "0000644 ", " 000644\x00", "000 644\x00", "0000648\x00",
	"00\x0000644", "0000644\x00\x00\x00\x00\x007", "0000\x00\x00\x00\x00\x00\x00\x00\x00", "00/0000\x00",
	"\x80000000\x00", "0000:00\x00", "\xff\xff\xff\xff\xff\xff\xff\xff",
}

// TestPlainOctalIsOctal: the walk's fast check of a numeric field passes no field that
// octal refuses, and passes every field of digits and NULs, as archive/tar's Writer
// writes them.
func TestPlainOctalIsOctal(t *testing.T) {
	for _, f := range plainOctalCases {
		checkPlainOctal(t, []byte(f))
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "metadata/version", Typeflag: tar.TypeReg, Size: 5, Mode: 0o644, ModTime: time.Unix(1764000000, 0)}))
	blk := buf.Bytes()
	for _, f := range [...][2]int{{100, 108}, {108, 116}, {116, 124}, {136, 148}, {329, 337}, {337, 345}} {
		assert.True(t, plainOctal(blk[f[0]:f[1]]), "%q", blk[f[0]:f[1]])
	}
}

func FuzzPlainOctal(f *testing.F) {
	for _, fld := range plainOctalCases {
		f.Add([]byte(fld))
	}
	f.Fuzz(checkPlainOctal)
}

func checkPlainOctal(t *testing.T, f []byte) {
	_, ok := octal(f)
	if plainOctal(f) && !ok {
		t.Fatalf("plainOctal(%q) passes a field octal refuses", f)
	}
	if len(bytes.Trim(f, "01234567\x00")) == 0 && !plainOctal(f) {
		t.Fatalf("plainOctal(%q) refuses a field of digits and NULs", f)
	}
}
