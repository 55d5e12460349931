// speedscope_export.mjs: opens a Chrome-trace JSON file in speedscope (a real viewer from npm)
// in headless Chromium, and writes what the viewer itself made of it: its Export (the
// speedscope file format), the console's warnings and errors, and a screenshot.
// Usage: node speedscope_export.mjs NODE_MODULES CHROMIUM TRACE.json OUT_DIR
// Writes OUT_DIR/export.speedscope.json, OUT_DIR/console.json, OUT_DIR/screenshot.png.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const [modules, chromium, tracePath, outDir] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const puppeteer = require('puppeteer-core');
const release = path.join(modules, 'speedscope', 'dist', 'release');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
                '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png' };

// Serves speedscope's files and the trace, from 127.0.0.1 only.
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
  const file = url === '/trace.json' ? tracePath
                                     : path.join(release, path.normalize(url === '/' ? '/index.html' : url));
  if (file !== tracePath && !file.startsWith(release)) { res.writeHead(403); res.end(); return; }
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
    res.end(data);
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const port = server.address().port;
fs.mkdirSync(outDir, { recursive: true });
const consoleLines = [];
let browser;
try {
  browser = await puppeteer.launch({
    executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.on('console', (m) => consoleLines.push({ type: m.type(), text: m.text() }));
  page.on('pageerror', (e) => consoleLines.push({ type: 'pageerror', text: String(e) }));
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: outDir });
  await page.goto(`http://127.0.0.1:${port}/#profileURL=${encodeURIComponent(
      `http://127.0.0.1:${port}/trace.json`)}`, { waitUntil: 'networkidle0' });
  // Loaded when the toolbar offers Export (the profile's views are drawn).
  await page.waitForFunction(() => [...document.querySelectorAll('div')].some(
      (d) => d.textContent.trim().endsWith('Export') && d.children.length <= 2), { timeout: 60000 });
  await new Promise((ok) => setTimeout(ok, 500));
  await page.screenshot({ path: path.join(outDir, 'screenshot.png') });
  const before = new Set(fs.readdirSync(outDir));
  await page.evaluate(() => {
    const tab = [...document.querySelectorAll('div')].find(
        (d) => d.textContent.trim().endsWith('Export') && d.children.length <= 2);
    tab.click();
  });
  let exported = null;
  for (let i = 0; i < 600 && !exported; ++i) {
    await new Promise((ok) => setTimeout(ok, 100));
    exported = fs.readdirSync(outDir).find(
        (f) => !before.has(f) && f.endsWith('.speedscope.json'));
  }
  if (!exported) throw new Error('speedscope exported nothing');
  fs.renameSync(path.join(outDir, exported), path.join(outDir, 'export.speedscope.json'));
} finally {
  fs.writeFileSync(path.join(outDir, 'console.json'), JSON.stringify(consoleLines, null, 1));
  if (browser) await browser.close();
  server.close();
}
