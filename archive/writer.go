package archive

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/restoregraph/restoregraph/manifest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Writer writes a backup tarball in Velero's format, gzip-compressed.
type Writer struct {
	format  string
	zw      *gzip.Writer
	tw      *tar.Writer
	written map[string]bool
	modTime time.Time
	objects int
}

// NewWriter starts a backup in format (Format10 or Format11) on w.
func NewWriter(w io.Writer, format string) (*Writer, error) {
	if format != Format10 && format != Format11 {
		return nil, fmt.Errorf("archive: %w %q", ErrUnsupportedFormat, format)
	}
	zw := gzip.NewWriter(w)
	bw := &Writer{format: format, zw: zw, tw: tar.NewWriter(zw), written: map[string]bool{},
		modTime: time.Unix(0, 0).UTC()} // fixed, so that the same objects give the same bytes
	if format == Format11 {
		if err := bw.file(metadataVersion, []byte(Format11+"\n")); err != nil {
			return nil, err
		}
	}
	return bw, nil
}

// Add writes obj, whose resource (plural) is resource. preferred says whether obj is at
// the source's preferred version of its group-resource: in format 1.1.0 the preferred
// version is written twice, as Velero does (at the 1.0 path and under
// <version>-preferredversion), and any other version under <version>. Format 1.0 holds
// only the preferred version.
func (w *Writer) Add(obj *unstructured.Unstructured, resource string, preferred bool) error {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("archive: %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return w.AddJSON(Entry{APIVersion: obj.GetAPIVersion(), Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}, data, preferred)
}

// Entry names an object's place in a backup.
type Entry struct {
	APIVersion, Resource, Namespace, Name string
}

// AddJSON is Add for an object already in JSON, as the API server returned it: data is
// written as it is, and must be the object e names.
func (w *Writer) AddJSON(e Entry, data []byte, preferred bool) error {
	gv, err := schema.ParseGroupVersion(e.APIVersion)
	if err != nil || gv.Version == "" {
		return fmt.Errorf("archive: %s %s/%s: apiVersion %q is not group/version", e.Resource, e.Namespace, e.Name, e.APIVersion)
	}
	if w.format == Format10 && !preferred {
		return fmt.Errorf("archive: format %s holds only the preferred version; %s %s/%s is not", Format10, e.Resource, e.Namespace, e.Name)
	}
	loc := location{gr: schema.GroupResource{Group: gv.Group, Resource: e.Resource}, namespace: e.Namespace, name: e.Name}
	var dirs []string
	switch {
	case w.format == Format10:
		dirs = []string{""}
	case preferred:
		dirs = []string{"", gv.Version + preferredSuffix}
	default:
		dirs = []string{gv.Version}
	}
	for _, d := range dirs {
		loc.dir = d
		if err := w.file(itemPath(loc), data); err != nil {
			return err
		}
	}
	w.objects++
	return nil
}

// AddManifest writes m as the backup's manifest (ManifestPath). It must come before
// every object, so that readers can take it instead of reading the bodies' metadata;
// m should record every version of each group-resource the backup holds
// (Manifest.SetVersions).
func (w *Writer) AddManifest(m *manifest.Manifest) error {
	if w.objects > 0 {
		return fmt.Errorf("archive: the manifest must come before the objects; %d were written", w.objects)
	}
	var buf bytes.Buffer
	if err := manifest.EncodeGzip(&buf, m); err != nil {
		return err
	}
	return w.file(ManifestPath, buf.Bytes())
}

func (w *Writer) file(name string, data []byte) error {
	if w.written[name] {
		return fmt.Errorf("archive: %s written twice", name)
	}
	w.written[name] = true
	hdr := &tar.Header{Name: name, Size: int64(len(data)), Mode: 0o644, Typeflag: tar.TypeReg, ModTime: w.modTime}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := w.tw.Write(data)
	return err
}

// Close finishes the tarball. It does not close the underlying writer.
func (w *Writer) Close() error {
	if err := w.tw.Close(); err != nil {
		return err
	}
	return w.zw.Close()
}
