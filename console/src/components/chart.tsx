// A Chart.js chart on a canvas, with a text description for screen readers and the same figures
// as a table beside it (a canvas is a picture to assistive technology).
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip);
Chart.defaults.font.family = 'system-ui, sans-serif';
Chart.defaults.color = '#333';
Chart.defaults.animation = false;

export const COLORS = { completed: '#2b7a3d', escalated: '#b35c00', abandoned: '#8a8a8a', started: '#2f5fb3', line: '#6a3fb3' };

export function ChartBox(props: { title: string; description: string; config: ChartConfiguration; table: ComponentChildren; height?: number }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const chart = new Chart(canvas.current!, { ...props.config, options: { responsive: true, maintainAspectRatio: false, ...props.config.options } });
    return () => chart.destroy();
  }, [props.config]);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div class="canvas" style={{ height: `${props.height ?? 220}px` }}>
        <canvas ref={canvas} role="img" aria-label={`${props.title}: ${props.description}`} />
      </div>
      <details>
        <summary>Figures</summary>
        {props.table}
      </details>
    </figure>
  );
}
