"""The fixed rules that choose what goes into each bundled corpus, and the writers' settings."""

import re

# ---------------------------------------------------------------- selection --
WEB_LANGS = ["en-US", "de-DE", "fr-FR", "es-ES", "ja-JP", "pt-BR"]
WEB_PAGES = 32              # pages per language (the same pages in every language)
WEB_MIN_BYTES = 2048        # skip tiny index/redirect pages
WEB_MAX_BYTES = 20000       # size cap, measured on the en-US page

DOCS_SHARDS = 4
DOCS_MAX_BYTES = 20000      # a document is at most this many UTF-8 bytes
DOCS_MIN_BYTES = 512        # smaller sections are merged into the next one
# which _sources/ files go in: whole directories, plus every Nth library page
DOCS_DIRS = ["tutorial/", "howto/", "faq/", "reference/", "using/",
             "extending/", "installing/", "distributing/"]
DOCS_TOP_FILES = ["glossary.rst.txt", "bugs.rst.txt", "license.rst.txt",
                  "copyright.rst.txt", "about.rst.txt"]
DOCS_LIBRARY_STRIDE = 6     # library/*.rst.txt, sorted, every 6th file

CODE_SHARDS = 3
CODE_MAX_BYTES = 40000
CODE_LICENSE = "PSF-2.0"
# Files that Debian's copyright file lists under a licence other than the
# Python licence are left out, so that the constant licence column is true.
CODE_EXCLUDE_RE = re.compile(
    r"^(test/|.*/tests?/|idlelib/|lib2to3/|logging/|multiprocessing/|"
    r"sqlite3/|asyncore\.py$|asynchat\.py$|tarfile\.py$|turtle\.py$|"
    r"_sysconfigdata_)")
CODE_STRIDE = 1             # keep every file that passes the filters

FORTUNE_SHARDS = 2
FORTUNE_STRIDE = 4          # every 4th quote, counted over all files in order

REFERENCE_CHAPTERS = {3, 4, 5, 6, 7, 8, 11, 12}   # plus the preface and appendix

ZSTD_LEVEL = 19
PARQUET_ZSTD_LEVEL = 9
