package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chart is a grouped bar chart: one group per category, one bar per
// series in each group.
type chart struct {
	ID, Title, YLabel string
	Categories        []string
	Series            []series
}

type series struct {
	Name   string
	Values []float64 // one per category
}

// Chart size: 8×4 inches, wider when there are many categories so that
// implementation names on the X axis do not run into each other.
const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 4 * vg.Inch
)

func (c chart) width() vg.Length {
	return max(chartWidth, vg.Length(len(c.Categories))*1.6*vg.Inch)
}

// render draws c and writes ID.png and ID.svg into dir; it returns the
// SVG document for inlining.
func (c chart) render(dir string) ([]byte, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.Y.Label.Text = c.YLabel
	p.Y.Min = 0
	p.Legend.Top = true
	n := len(c.Series)
	// Headroom above the tallest bar keeps the legend (top right) clear
	// of the bars.
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	if top > 0 {
		p.Y.Max = top * (1.15 + 0.07*float64(n))
	}
	barWidth := vg.Points(max(8, 60/float64(max(n, 1))))
	for i, s := range c.Series {
		bars, err := plotter.NewBarChart(plotter.Values(s.Values), barWidth)
		if err != nil {
			return nil, fmt.Errorf("report: chart %s: %w", c.ID, err)
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = barWidth * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(bars)
		if n > 1 || s.Name != "" {
			p.Legend.Add(s.Name, bars)
		}
	}
	p.NominalX(c.Categories...)
	p.X.Tick.Label.Font.Size = vg.Points(9)
	if err := p.Save(c.width(), chartHeight, filepath.Join(dir, c.ID+".png")); err != nil {
		return nil, fmt.Errorf("report: chart %s: %w", c.ID, err)
	}
	wt, err := p.WriterTo(c.width(), chartHeight, "svg")
	if err != nil {
		return nil, fmt.Errorf("report: chart %s: %w", c.ID, err)
	}
	var svg bytes.Buffer
	if _, err := wt.WriteTo(&svg); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, c.ID+".svg"), svg.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return stripProlog(svg.Bytes()), nil
}

// stripProlog drops the XML declaration and doctype before <svg, which
// have no meaning inside HTML.
func stripProlog(svg []byte) []byte {
	if i := bytes.Index(svg, []byte("<svg")); i > 0 {
		return svg[i:]
	}
	return svg
}
