"""Where the kvplan package goes under an install prefix, as this interpreter looks for packages.

Prints five lines for python/CMakeLists.txt: the interpreter's own prefix and its package
directory relative to it (Debian: /usr and lib/python3/dist-packages), its local prefix and
directory (Debian: /usr/local and lib/python3.X/dist-packages), and for any other prefix the
directory a PYTHONPATH would name there (lib/python3.X/site-packages).
"""

import os
import sys
import sysconfig


def scheme_dir(scheme, prefix):
    names = {"base": prefix, "platbase": prefix, "installed_base": prefix,
             "installed_platbase": prefix}
    return os.path.relpath(sysconfig.get_path("platlib", scheme, names), prefix)


def main():
    schemes = sysconfig.get_scheme_names()
    default = (sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme")
               else sysconfig._get_default_scheme())
    base = os.path.realpath(sys.base_prefix)
    # Debian's interpreter keeps its packages in the deb_system scheme and sends pip's to
    # /usr/local through posix_local, whose paths already hold the "local".
    system = "deb_system" if "deb_system" in schemes else default
    print(base, scheme_dir(system, base), sep="\n")
    if default == "posix_local":
        local = os.path.join(base, "local")
        print(local, os.path.relpath(sysconfig.get_path("platlib"), local), sep="\n")
    else:
        print(base, scheme_dir(default, base), sep="\n")
    print(scheme_dir("posix_prefix", "/prefix"))


main()
