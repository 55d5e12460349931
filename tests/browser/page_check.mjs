// page_check.mjs: opens a local HTML file in headless Chromium with the network cut off, takes
// a full-page screenshot and reports, as JSON on stdout, each <section>'s id, heading and how
// many plots (svg) and tables it holds, its tables' cells as the page shows them and its first
// paragraph, every request the page tried to make and every script or console error.
// Usage: node page_check.mjs NODE_MODULES CHROMIUM PAGE.html OUT.png
import path from 'node:path';
import { createRequire } from 'node:module';

const [modules, chromium, page, png] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const puppeteer = require('puppeteer-core');
const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const tab = await browser.newPage();
  await tab.setViewport({ width: 1400, height: 1000 });
  const requests = [];
  await tab.setRequestInterception(true);
  tab.on('request', (r) => {
    if (r.url().startsWith('file:') || r.url().startsWith('data:')) return r.continue();  // inline
    requests.push(r.url());
    return r.abort();
  });
  const errors = [];
  tab.on('pageerror', (e) => errors.push(String(e)));
  tab.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  await tab.goto('file://' + path.resolve(page), { waitUntil: 'load', timeout: 120000 });
  await tab.screenshot({ path: png, fullPage: true });
  const sections = await tab.evaluate(() => [...document.querySelectorAll('section')].map((s) => ({
    id: s.id, heading: (s.querySelector('h2') || {}).textContent || '',
    svgs: s.querySelectorAll('svg').length, tables: s.querySelectorAll('table').length,
    height: s.getBoundingClientRect().height,
    cells: [...s.querySelectorAll('table')].map((t) => [...t.rows].map(
      (r) => [...r.cells].map((c) => c.innerText))),
    first: ((s.querySelector('p') || {}).innerText || ''),
  })));
  console.log(JSON.stringify({ sections, requests, errors }));
} finally {
  await browser.close();
}
