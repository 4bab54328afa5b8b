// static/boot/wheels.mjs under Node: which wheels a page's package list needs, from Pyodide's lock.
import assert from "node:assert/strict";
import { test } from "node:test";

import { absolutePackages, lockedClosure, urlPackages, wheelsToInstall } from "../../static/boot/wheels.mjs";

const DIGEST = "00".repeat(31) + "ff";
const entry = (name, depends = [], extra = {}) => ({
  name,
  depends,
  file_name: `${name}-1.0-py3-none-any.whl`,
  install_dir: "site",
  sha256: DIGEST,
  ...extra,
});
const LOCK = {
  packages: {
    pydantic: entry("pydantic", ["pydantic_core", "typing-extensions", "annotated-types"]),
    "pydantic-core": entry("pydantic_core", ["typing-extensions"]),
    "typing-extensions": entry("typing-extensions"),
    "annotated-types": entry("annotated-types"),
    "markdown-it-py": entry("markdown-it-py", ["mdurl"]),
    mdurl: entry("mdurl"),
    distutils: entry("distutils", [], { install_dir: "stdlib" }),
  },
};
const INDEX = "https://riacho.test/static/vendor/pyodide/";
const BASE = "https://riacho.test/";

test("a list's closure: each dependency once, names normalised, sorted", () => {
  assert.deepEqual(lockedClosure(LOCK, ["Pydantic", "markdown_it_py", "pydantic"]), [
    "annotated-types",
    "markdown-it-py",
    "mdurl",
    "pydantic",
    "pydantic-core",
    "typing-extensions",
  ]);
});

test("packages named by path or wheel file are not looked up in the lock", () => {
  assert.deepEqual(lockedClosure(LOCK, ["./static/app/app-0-py3-none-any.whl", "mdurl"]), ["mdurl"]);
});

test("a package the lock lacks is an error that names it", () => {
  assert.throws(() => lockedClosure(LOCK, ["numpy"]), /numpy is not in pyodide-lock.json/);
});

test("the wheels to install: the locked ones with their integrity, then the page's own by URL", () => {
  const wheels = wheelsToInstall(LOCK, ["mdurl", "./static/app/riacho_app-0.1-py3-none-any.whl"], BASE, INDEX);
  assert.deepEqual(wheels, [
    {
      name: "mdurl",
      url: `${INDEX}mdurl-1.0-py3-none-any.whl`,
      integrity: `sha256-${Buffer.from(DIGEST, "hex").toString("base64")}`,
      channel: "default channel",
    },
    {
      name: "riacho-app",
      url: `${BASE}static/app/riacho_app-0.1-py3-none-any.whl`,
      integrity: undefined,
      channel: `${BASE}static/app/riacho_app-0.1-py3-none-any.whl`,
    },
  ]);
});

test("a package installed outside site-packages is refused (the worker cannot place it)", () => {
  assert.throws(() => wheelsToInstall(LOCK, ["distutils"], BASE, INDEX), /distutils: installed to stdlib/);
});

test("packages named by URL are made absolute against the page; names stay names", () => {
  const packages = ["pydantic", "./static/app/a.whl", "../b.whl"];
  const base = "https://riacho.test/chat/";
  assert.deepEqual(absolutePackages(packages, base), [
    "pydantic",
    "https://riacho.test/chat/static/app/a.whl",
    "https://riacho.test/b.whl",
  ]);
  assert.deepEqual(urlPackages(packages, base), ["https://riacho.test/chat/static/app/a.whl", "https://riacho.test/b.whl"]);
});
