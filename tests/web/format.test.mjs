// The page's locale fallback: a language tag Intl rejects (WebKitGTK under
// LANG=C.UTF-8 reports "C") gives the default locale, never a RangeError.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { validLocale } from '../../web/core/format.mjs';

it('keeps a tag Intl accepts (canonicalized) and falls back for one it rejects', () => {
  assert.equal(validLocale('de-DE'), 'de-DE');
  assert.equal(validLocale('en-us'), 'en-US');
  for (const bad of ['C', 'C.UTF-8', 'en_US', '', undefined]) {
    assert.equal(validLocale(bad), 'en-US', String(bad));
    assert.equal(validLocale(bad, 'fr'), 'fr', String(bad));
    assert.doesNotThrow(() => new Intl.NumberFormat(validLocale(bad)).format(1.5));
  }
});
