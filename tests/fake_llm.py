"""The fake OpenAI-compatible model of the end-to-end tests: the package's offline stand-in
(hermes_cmms/common/standin.py, which `hermes-cmms demo` runs too), started by this path.

Usage: python fake_llm.py LOGFILE [PORT]. It prints "PORT <n>" once it listens on 127.0.0.1,
appends every request to LOGFILE as one JSON line {"t", "method", "path", "body"}, and answers
"FAKE-REPLY: got it (N msgs, M tools)", or the text of the file FAKE_LLM_REPLY names while it
exists.
"""
from hermes_cmms.common.standin import main

if __name__ == "__main__":
    main()
