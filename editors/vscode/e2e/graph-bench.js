// How long the `jaxpr graph` HTML page takes to draw in Chromium: from
// navigation until the viewer has laid out its groups and drawn what is in
// view (`data-ready` on <body>), with the layout the page starts with (groups
// closed for a large file). Prints one line per page.
//
//   node e2e/graph-bench.js PAGE.html...
//
// JAXPR_CHROMIUM: the Chromium binary (default Debian's).
'use strict';

const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const pages = process.argv.slice(2);
  if (!pages.length) {
    throw new Error('usage: node e2e/graph-bench.js PAGE.html...');
  }
  const browser = await chromium.launch({
    executablePath: process.env.JAXPR_CHROMIUM || '/usr/lib/chromium/chromium',
    args: ['--no-sandbox'],
  });
  try {
    for (const page of pages) {
      const tab = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const times = [];
      for (let run = 0; run < 3; run++) {
        const start = Date.now();
        await tab.goto(`file://${path.resolve(page)}`);
        await tab.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
        times.push(Date.now() - start);
      }
      const shown = await tab.evaluate(() => document.querySelectorAll('#viewport .node').length);
      const status = await tab.evaluate(() => document.getElementById('status').textContent);
      console.log(`${path.basename(page)}: drawn in ${Math.min(...times)} ms (best of 3: ${times.join(', ')} ms); ${shown} node elements; ${status}`);
      await tab.close();
    }
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
