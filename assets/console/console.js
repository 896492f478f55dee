// The admin console's one script (src/http/console/): names the browser's time zone in the
// search forms (times typed without an offset are read in it) and draws the dashboard's 30-day
// chart with Chart.js from the page's JSON data island. Everything else works without it.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone) {
    for (const field of document.querySelectorAll('input[data-browser-zone]')) field.value = zone;
    for (const name of document.querySelectorAll('[data-browser-zone-name]')) name.textContent = zone;
  }
  const data = document.getElementById('usage-data');
  const canvas = document.getElementById('usage-chart');
  if (data === null || canvas === null || typeof Chart === 'undefined') return;
  const stats = JSON.parse(data.textContent || '{}');
  const days = [...new Set(Object.values(stats).flatMap((series) => series.map((day) => day.date)))].sort();
  const colours = ['#0550ae', '#116329', '#a40e26', '#7d4e00', '#8250df', '#1b7c83'];
  const datasets = Object.entries(stats).flatMap(([profile, series], index) => {
    const byDay = new Map(series.map((day) => [day.date, day]));
    const colour = colours[index % colours.length];
    return [
      { label: `${profile}: unique users`, data: days.map((day) => byDay.get(day)?.unique_user_count ?? 0), borderColor: colour, backgroundColor: colour },
      { label: `${profile}: peak sessions`, data: days.map((day) => byDay.get(day)?.max_connection_count ?? 0), borderColor: colour, backgroundColor: colour, borderDash: [6, 4] },
    ];
  });
  new Chart(canvas, {
    type: 'line',
    data: { labels: days, datasets },
    options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
  });
});
