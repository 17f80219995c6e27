package memcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d9f8c6b5-abcde","namespace":"shop","uid":"0ed5e479-fe1f-405b-8480-5cfcbe4d4c59","resourceVersion":"1234","creationTimestamp":"2026-11-01T10:00:00Z","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f8c6b5","uid":"1ed5e479-fe1f-405b-8480-5cfcbe4d4c59","controller":true,"blockOwnerDeletion":true}],"generateName":"web-7d9f8c6b5-","labels":{"app.kubernetes.io/name":"web","app.kubernetes.io/part-of":"shop"}},"spec":{"containers":[{"name":"app","image":"registry.example.com/web:1.4.2","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"envFrom":[{"configMapRef":{"name":"web-config"}}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"web","securityContext":{},"schedulerName":"default-scheduler","nodeName":"node-1","priority":0,"enableServiceLinks":true},"status":{"phase":"Running"}}`

// The store's encoding is encoding/json's, byte for byte (keys sorted, HTML escaped),
// but for invalid UTF-8, which both replace with U+FFFD: encoding/json writes it
// escaped, json/v2 as it is.
func TestStoredEncodingIsEncodingJSONs(t *testing.T) {
	obj, err := jsontree.Object([]byte(podJSON))
	require.NoError(t, err)
	obj["html"] = "<a href=\"x\">&</a>"
	obj["float"] = 1.5
	obj["big"] = int64(1) << 62
	want, err := json.Marshal(obj)
	require.NoError(t, err)
	require.Equal(t, string(want), string(newStored(obj, nil).json()))

	raw := newStored(map[string]any{"invalid": "a\xffb"}, nil).json()
	require.Equal(t, "{\"invalid\":\"a\uFFFDb\"}", string(raw))
}

// A created object, encoded before the store gives it its resourceVersion, is read as
// it would be encoded with it, whatever its length, before its resource has a
// dictionary and after, when it is kept compressed: in memory, and in a data file whose
// pages are memory (tmpfs); in a data file on a disk it is kept as it is. In a file the
// record keeps only its name, UID and the block's place.
func TestUnversionedIsEncodedWithItsVersion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush int  // the data file's; 0 for none
		inRAM bool // the data file's pages are memory
	}{
		{"in memory", 0, false},
		{"in a file in memory", 1, true},
		{"in a file in memory, blocks not yet written", flushBytes, true},
		{"in a file on a disk", 1, false},
		{"in a file on a disk, blocks not yet written", flushBytes, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &resourceType{}
			var file *dataFile
			inFile := tc.flush > 0
			if inFile {
				file = tempDataFile(t, tc.flush)
				file.inRAM = tc.inRAM
				rt.codec.useFile(file)
			}
			compresses := !inFile || tc.inRAM
			size := int64(0)
			compressed := 0
			// Twice the dictionary's sample: a resource that compresses has made its
			// dictionary halfway through.
			for i := range 2 * dictBytes / len(podJSON) {
				rv := strconv.Itoa(i)
				if i%2 == 1 {
					rv = "18446744073709551615"
				}
				obj, err := jsontree.Object([]byte(podJSON))
				require.NoError(t, err)
				meta(obj)["name"] = fmt.Sprintf("pod-%d", i)
				st := encodeUnversioned(rt, &canonSet{}, obj).version(obj, rv)
				assert.Equal(t, rv, metaString(obj, "resourceVersion"))
				want := newStored(obj, nil)
				require.Equal(t, string(want.json()), string(st.json()), "object %d", i)
				assert.Equal(t, []string{want.name(), string(want.uid()), want.rv()}, []string{st.name(), string(st.uid()), st.rv()})
				if inFile {
					_, rest := st.afterUID()
					assert.Len(t, rest, fileRefLen, "object %d keeps its JSON in the file", i)
					assert.Greater(t, file.size(), size)
					if !compresses {
						// As it is, but for the name and UIDs its cut table holds.
						assert.Contains(t, string(rawOf(st)), `"spec":{"containers":[{"envFrom":`, "object %d is kept as it is", i)
					}
					size = file.size()
				}
				if st.in != nil && st.in.dict != nil {
					compressed++
					assert.Less(t, len(rawOf(st)), len(want.json())/4, "object %d is kept compressed", i)
				}
			}
			if compresses {
				assert.Greater(t, compressed, 3, "objects kept compressed")
			} else {
				assert.Zero(t, compressed, "objects kept compressed on a disk")
			}

			// An object too large to compress is kept as it is, and read whole.
			obj, err := jsontree.Object([]byte(podJSON))
			require.NoError(t, err)
			obj["data"] = map[string]any{"big": strings.Repeat("x", compressMax)}
			st := encodeUnversioned(rt, &canonSet{}, obj).version(obj, "7")
			assert.True(t, st.in == nil || st.in.dict == nil)
			assert.Equal(t, string(newStored(obj, nil).json()), string(st.json()))
			if inFile {
				_, rest := st.afterUID()
				assert.Len(t, rest, fileRefLen)
			}
		})
	}
}

// A data file knows whether its file system keeps its pages in memory (tmpfs, ramfs),
// as stat(1) tells them: in /dev/shm, tmpfs wherever it is there, and in the test's
// temporary directory, on a disk or not.
func TestDataFileKnowsTmpfs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux's file systems are asked")
	}
	dirs := []string{t.TempDir()}
	if _, err := os.Stat("/dev/shm"); err == nil {
		dirs = append(dirs, "/dev/shm")
	}
	for _, dir := range dirs {
		out, err := exec.Command("stat", "-f", "-c", "%T", dir).Output()
		require.NoError(t, err)
		fs := strings.TrimSpace(string(out))
		d, err := openDataFile(dir, 0)
		require.NoError(t, err)
		assert.Equal(t, fs == "tmpfs" || fs == "ramfs", d.inRAM, "%s, %s", dir, fs)
		if dir == "/dev/shm" {
			assert.True(t, d.inRAM, "/dev/shm is %s", fs)
		}
		require.NoError(t, d.close())
	}
}

// tempDataFile makes a data file, writing flush bytes at a time, that the test closes.
func tempDataFile(t testing.TB, flush int) *dataFile {
	d, err := openDataFile(t.TempDir(), flush)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.close()) })
	return d
}

// rawOf returns st's JSON as kept, without what its cut table lists.
func rawOf(st *stored) []byte {
	_, raw := st.block(new([]byte))
	return raw
}

// A data file that refuses a write (a full disk: /dev/full) loses nothing: the blocks
// it had taken and not written are read from memory, the objects after are kept in
// memory, compressed or not, every one is read back whole, and the file says why.
func TestDataFileFullKeepsInMemory(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no /dev/full here:", err)
	}
	file := &dataFile{f: f, flush: 4 << 10, inRAM: true} // compressed blocks too
	defer file.close()
	rt := &resourceType{}
	rt.codec.useFile(file)
	var stored []*stored
	var want []string
	taken, compressed := 0, 0
	for i := 0; compressed < 2; i++ {
		obj, err := jsontree.Object([]byte(podJSON))
		require.NoError(t, err)
		meta(obj)["name"] = fmt.Sprintf("pod-%d", i)
		st := encodeUnversioned(rt, &canonSet{}, obj).version(obj, "9")
		stored, want = append(stored, st), append(want, string(newStored(obj, nil).json()))
		if st.in.inFile() {
			taken++
		} else if st.in != nil && st.in.dict != nil {
			compressed++
		}
		require.Less(t, i, 2*dictBytes/len(podJSON), "no dictionary made")
	}
	assert.ErrorIs(t, file.err(), syscall.ENOSPC)
	assert.Equal(t, int64(0), file.written.Load())
	assert.Greater(t, taken, file.flush/len(podJSON), "the file took blocks until it wrote them")
	for i, st := range stored {
		require.Equal(t, want[i], string(st.json()), "object %d", i)
	}
}

// The JSON a record keeps leaves out the strings the record holds anyway (its name,
// namespace, UID, resourceVersion and owners' UIDs), and is read whole; a string the
// record would not give back as it was is kept in the JSON.
func TestStoredKeepsMetadataOnce(t *testing.T) {
	file := tempDataFile(t, 1) // and the same kept in a data file
	const uid, ownerUID = "0ed5e479-fe1f-405b-8480-5cfcbe4d4c59", "1ed5e479-fe1f-405b-8480-5cfcbe4d4c59"
	for _, tc := range []struct {
		name   string
		change func(md map[string]any)
		kept   []string // in the record's JSON
		cut    []string // not in it
	}{
		{name: "a Pod", cut: []string{uid, ownerUID, `"web-7d9f8c6b5-abcde"`, `"namespace":"shop"`, `"1234"`}},
		{name: "a resourceVersion the store writes otherwise", change: func(md map[string]any) { md["resourceVersion"] = "01234" },
			kept: []string{`"01234"`}, cut: []string{uid, ownerUID}},
		{name: "an owner reference without a UID", change: func(md map[string]any) {
			md["ownerReferences"] = append(md["ownerReferences"].([]any), map[string]any{"name": "x", "uid": ""})
		}, kept: []string{ownerUID}, cut: []string{uid}},
		{name: "a UID JSON escapes", change: func(md map[string]any) { md["uid"] = "a<b" }, kept: []string{`a\u003cb`}, cut: []string{ownerUID}},
		{name: "no owners, no namespace", change: func(md map[string]any) {
			delete(md, "ownerReferences")
			delete(md, "namespace")
		}, cut: []string{uid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := jsontree.Object([]byte(podJSON))
			require.NoError(t, err)
			if tc.change != nil {
				tc.change(meta(obj))
			}
			want, err := json.Marshal(obj)
			require.NoError(t, err)
			for _, in := range []*storage{nil, {file: file}} {
				st := newStored(obj, in)
				assert.Equal(t, string(want), string(st.json()))
				for _, s := range tc.kept {
					assert.Contains(t, string(rawOf(st)), s)
				}
				for _, s := range tc.cut {
					assert.NotContains(t, string(rawOf(st)), s)
				}
				if tc.change == nil {
					assert.Equal(t, 1, strings.Count(st.data, uid), "the record holds its UID once")
					assert.Equal(t, 0, strings.Count(st.data, ownerUID), "and its owner's not at all: the owner's record does")
				}
			}
		})
	}
}

// Whatever an object's metadata holds, its record reads back as it was encoded: as
// stored whole, and as created, compressed or not, with the resourceVersion the store
// gives.
func FuzzStored(f *testing.F) {
	f.Add([]byte(podJSON))
	f.Add([]byte(`{"metadata":{"name":"a","namespace":"","uid":"","resourceVersion":"07","ownerReferences":[{"uid":"x"},{"uid":""},{"uid":7}]}}`))
	f.Add([]byte(`{"metadata":{"name":"a\u003c","ownerReferences":[{"uid":"x"},{"uid":"x"}],"uid":"x"}}`))
	rt, inFile := &resourceType{}, &resourceType{}
	inFile.codec.useFile(tempDataFile(f, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := jsontree.Object(data)
		if err != nil || obj == nil {
			return
		}
		want, err := jsontree.Marshal(obj)
		if err != nil {
			return
		}
		if rv := metaString(obj, "resourceVersion"); rv != "" {
			if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
				return // the store stores the resourceVersions it gives
			}
		}
		require.Equal(t, string(want), string(newStored(obj, nil).json()))
		md, ok := obj["metadata"].(map[string]any)
		if !ok {
			return
		}
		st := encodeUnversioned(rt, &canonSet{}, obj).version(obj, "42")
		md["resourceVersion"] = "42"
		want, err = jsontree.Marshal(obj)
		require.NoError(t, err)
		require.Equal(t, string(want), string(st.json()))
		md["resourceVersion"] = ""
		st = encodeUnversioned(inFile, &canonSet{}, obj).version(obj, "42")
		require.Equal(t, string(want), string(st.json()), "kept in a data file")
	})
}

// BenchmarkEncode encodes a Pod's tree as the store does, against json/v2 under
// encoding/json's options (which the store used before) and encoding/json.
func BenchmarkEncode(b *testing.B) {
	obj, err := jsontree.Object([]byte(podJSON))
	require.NoError(b, err)
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsontree.Marshal(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonv2.Marshal(obj, jsonv1.DefaultOptionsV1()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A request's body is read whole whatever its Content-Length says, up to the limit.
func TestReadBody(t *testing.T) {
	body := []byte(`{"kind":"ConfigMap"}`)
	for _, tc := range []struct {
		name   string
		length int64
		body   []byte
		want   []byte
		err    bool
	}{
		{"as long as said", int64(len(body)), body, body, false},
		{"no length", -1, body, body, false},
		{"longer than said", 5, body, body, false},
		{"shorter than said", 100, body, nil, true},
		{"over the limit", -1, make([]byte, maxBody+10), make([]byte, maxBody+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/a/configmaps", bytes.NewReader(tc.body))
			r.ContentLength = tc.length
			got, err := readBody(r)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Objects with the same labels share one set, in the order of its keys, whatever order
// their maps give, from the second time the set is seen (the first keeps its own);
// other labels, or labels that differ in one value, or whose keys and values only join
// into the same bytes, get sets of their own, and a lookup reads each object's own.
func TestLabelSetsShared(t *testing.T) {
	rt := &resourceType{}
	canon := &canonSet{}
	labelled := func(labels map[string]any) labelSet {
		obj, err := jsontree.Object([]byte(podJSON))
		require.NoError(t, err)
		meta(obj)["labels"] = labels
		return encodeUnversioned(rt, canon, obj).labelSet()
	}
	pairs := func(l labelSet) []string {
		var p []string
		l.each(func(k, v string) bool { p = append(p, k, v); return true })
		return p
	}
	long := strings.Repeat("v", 300) // a length of two bytes
	app := func(name string) map[string]any {
		return map[string]any{"app": name, "tier": "web", "velero.io/restore-name": "r", "velero.io/backup-name": "b", "a": "first", "long": long}
	}
	web1, web2, db, web3 := labelled(app("web")), labelled(app("web")), labelled(app("db")), labelled(app("web"))
	assert.Equal(t, []string{"a", "first", "app", "web", "long", long, "tier", "web", "velero.io/backup-name", "b", "velero.io/restore-name", "r"}, pairs(web1))
	assert.Equal(t, web1, web2)
	assert.NotSame(t, unsafe.StringData(web1.s), unsafe.StringData(web2.s), "the first keeps its own")
	assert.Same(t, unsafe.StringData(web2.s), unsafe.StringData(web3.s), "equal labels seen again share a set")
	assert.NotEqual(t, web1, db)
	assert.Equal(t, "db", db.Get("app"))
	assert.Equal(t, "web", web2.Get("app"))
	assert.Equal(t, long, web2.Get("long"))
	assert.False(t, web2.Has("ap"))
	assert.NotEqual(t, labelled(map[string]any{"ab": "c"}), labelled(map[string]any{"a": "bc"}))
	assert.Equal(t, labelSet{}, labelled(nil))
	assert.Nil(t, pairs(labelled(map[string]any{})))
	assert.Equal(t, []string{"app", "web"}, pairs(newStored(map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}}, nil).labelSet()))
}

// Objects created, updated and read at once by many clients of a server whose data file
// writes a few objects at a time read back as written: blocks read from the file and
// from those not yet written, while others are added and written (run with -race).
func TestDataFileConcurrent(t *testing.T) {
	s, c := start(t, Options{DataDir: t.TempDir(), dataFlush: 2 << 10})
	cms := c.Resource(cmGVR).Namespace("ns")
	ctx := context.Background()
	const clients, each = 8, 150
	var g errgroup.Group
	for w := range clients {
		g.Go(func() error {
			for i := range each {
				name := fmt.Sprintf("cm-%d-%d", w, i)
				value := strings.Repeat(fmt.Sprint(w, i), 40)
				obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns"},
					"data": map[string]any{"k": value}}
				if err := s.Create(ctx, cmGVR, "ns", obj); err != nil {
					return err
				}
				got, err := cms.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if v, _, _ := unstructured.NestedString(got.Object, "data", "k"); v != value {
					return fmt.Errorf("%s reads %q", name, v)
				}
				got.Object["data"] = map[string]any{"k": value + "!"}
				if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, clients*each)
	for _, o := range list.Items {
		var w, i int
		_, err := fmt.Sscanf(o.GetName(), "cm-%d-%d", &w, &i)
		require.NoError(t, err)
		v, _, _ := unstructured.NestedString(o.Object, "data", "k")
		require.Equal(t, strings.Repeat(fmt.Sprint(w, i), 40)+"!", v, o.GetName())
	}
	require.NoError(t, s.DataFileError())
	assert.Positive(t, s.file.written.Load(), "blocks were written to the file")
}
