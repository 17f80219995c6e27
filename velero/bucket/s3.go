package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// client is an S3 client of the store, its credentials from the SDK's chain.
func (st S3Options) client(ctx context.Context) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if st.Region != "" {
		opts = append(opts, config.WithRegion(st.Region))
	}
	if st.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(st.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if st.Endpoint != "" {
			o.BaseEndpoint = aws.String(st.Endpoint)
		}
		o.UsePathStyle = st.PathStyle
	}), nil
}

// S3 is an S3 bucket: ranged GETs, one PUT an object, and the store's not-found and
// access-denied answers as fs's errors.
type S3 struct {
	Client *s3.Client
	Bucket string
}

var _ Store = (*S3)(nil)

// Open reads key from offset on, with a ranged GET.
func (s *S3) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &s.Bucket, Key: &key}
	if offset > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := s.Client.GetObject(ctx, in)
	if err != nil {
		var api smithy.APIError
		var resp *smithyhttp.ResponseError
		switch {
		case errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NoSuchBucket" || api.ErrorCode() == "NotFound"):
			return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		case errors.As(err, &api) && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "InvalidAccessKeyId" || api.ErrorCode() == "SignatureDoesNotMatch"):
			return nil, fmt.Errorf("%w: %v", fs.ErrPermission, err)
		case errors.As(err, &resp) && resp.HTTPStatusCode() == 404:
			return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		case errors.As(err, &resp) && resp.HTTPStatusCode() == 403:
			return nil, fmt.Errorf("%w: %v", fs.ErrPermission, err)
		}
		return nil, err
	}
	return &s3Object{ReadCloser: out.Body, size: objectSize(out, offset)}, nil
}

// objectSize is the whole object's length: Content-Range's total for a ranged GET.
func objectSize(out *s3.GetObjectOutput, offset int64) int64 {
	if r := aws.ToString(out.ContentRange); r != "" {
		if i := strings.LastIndexByte(r, '/'); i >= 0 {
			var n int64
			if _, err := fmt.Sscan(r[i+1:], &n); err == nil {
				return n
			}
		}
	}
	if out.ContentLength != nil {
		return offset + *out.ContentLength
	}
	return -1
}

// s3Object is a GET's body with the object's whole length (archive.Sized), so that a
// connection that ends early is told from the object's end.
type s3Object struct {
	io.ReadCloser
	size int64
}

func (o *s3Object) Size() int64 { return o.size }

// Put writes body to key with one PUT (S3 takes up to 5 GiB so). A body that can seek
// (a file) is sent as it is read; any other is read into memory first, for S3 needs the
// length before the body.
func (s *S3) Put(ctx context.Context, key string, body io.Reader) error {
	rs, ok := body.(io.ReadSeeker)
	if !ok {
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		rs = bytes.NewReader(data)
	}
	here, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	end, err := rs.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if _, err := rs.Seek(here, io.SeekStart); err != nil {
		return err
	}
	_, err = s.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: &key, Body: rs, ContentLength: aws.Int64(end - here)})
	return err
}

// Exists says whether the bucket holds key (HeadObject).
func (s *S3) Exists(ctx context.Context, key string) (bool, error) {
	_, err := s.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.Bucket, Key: &key})
	var nf *s3types.NotFound
	var resp *smithyhttp.ResponseError
	if errors.As(err, &nf) || errors.As(err, &resp) && resp.HTTPStatusCode() == 404 {
		return false, nil
	}
	return err == nil, err
}
