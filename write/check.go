package write

import "time"

// Check validates req as WriteAt would as of the clock reading now, and writes
// nothing: it returns the error WriteAt would return for a request refused whole
// (over MaxSeriesPerRequest or MaxSamplesPerRequest, wrapping ErrInvalid), or
// else the rejections WriteAt would list in Result.Rejected, nil when it would
// write everything. Endpoints whose requests must be all or nothing (promapi's
// VictoriaMetrics import) call it before Write, so that an invalid sample
// refuses the whole request before anything of it is stored.
func (w *Writer) Check(req *Request, now time.Time) ([]Rejection, error) {
	p, err := w.validate(req, now)
	if err != nil {
		return nil, err
	}
	return p.res.Rejected, nil
}
