"""Where results and runs live: the JSON result store keyed by every parameter that changes a result
(``results``; the superset lookup and the ``REPRO_COMPUTE=refuse`` guard), run folders (``runs``), identities and data
fingerprints, atomic writes and locks, and the lanes that split a page's runs between processes. The lowest room: it
imports nothing else of ``repro``."""
