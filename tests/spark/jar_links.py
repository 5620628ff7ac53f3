"""Does a jar link against a classpath? Reads class files (no JVM): every method and field the jar's
classes reference in a class outside the jar must exist there (by name and descriptor, looked up
through superclasses and superinterfaces as the JVM resolves them), and no concrete class of the jar
may leave an abstract method of its supertypes unimplemented (``AbstractMethodError``). JDK classes
(``java/``, ``javax/``, ``jdk/``, ``sun/``) are taken as present; their members are not checked.

A jar built against another Spark line fails this against the running Spark's jars; the JVM would
only fail when the missing member is first used.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ACC_STATIC, ACC_PRIVATE, ACC_INTERFACE, ACC_ABSTRACT = 0x0008, 0x0002, 0x0200, 0x0400
JDK = ("java/", "javax/", "jdk/", "sun/")


@dataclass
class ClassFile:
    name: str
    access: int
    super_name: str | None
    interfaces: list[str]
    fields: set[tuple[str, str]]
    methods: dict[tuple[str, str], int]  # (name, descriptor) -> access flags
    refs: list[tuple[int, str, str, str]] = field(default_factory=list)  # (tag, owner, name, descriptor)


def parse(data: bytes) -> ClassFile:
    pos = 8
    (count,) = struct.unpack_from(">H", data, pos)
    pos += 2
    pool: list[object] = [None] * count
    tags = [0] * count
    i = 1
    while i < count:
        tag = data[pos]
        tags[i] = tag
        pos += 1
        if tag == 1:
            (n,) = struct.unpack_from(">H", data, pos)
            pool[i] = data[pos + 2 : pos + 2 + n].decode("utf-8", "replace")  # modified UTF-8
            pos += 2 + n
        elif tag in (3, 4):
            pos += 4
        elif tag in (5, 6):
            pos += 8
            i += 1
        elif tag in (7, 8, 16, 19, 20):
            pool[i] = struct.unpack_from(">H", data, pos)
            pos += 2
        elif tag in (9, 10, 11, 12, 17, 18):
            pool[i] = struct.unpack_from(">HH", data, pos)
            pos += 4
        elif tag == 15:
            pos += 3
        else:
            raise ValueError(f"constant pool tag {tag}")
        i += 1

    def utf(index: int) -> str:
        return str(pool[index])

    def class_name(index: int) -> str:
        return utf(pool[index][0])  # type: ignore[index]

    access, this, super_index, n_interfaces = struct.unpack_from(">HHHH", data, pos)
    pos += 8
    interfaces = [class_name(struct.unpack_from(">H", data, pos + 2 * k)[0]) for k in range(n_interfaces)]
    pos += 2 * n_interfaces
    members: list[dict[tuple[str, str], int]] = []
    for _ in range(2):  # fields, then methods
        (n,) = struct.unpack_from(">H", data, pos)
        pos += 2
        table: dict[tuple[str, str], int] = {}
        for _ in range(n):
            flags, name, desc, n_attrs = struct.unpack_from(">HHHH", data, pos)
            pos += 8
            for _ in range(n_attrs):
                (length,) = struct.unpack_from(">I", data, pos + 2)
                pos += 6 + length
            table[utf(name), utf(desc)] = flags
        members.append(table)
    cls = ClassFile(
        class_name(this),
        access,
        class_name(super_index) if super_index else None,
        interfaces,
        set(members[0]),
        members[1],
    )
    for k in range(1, count):
        if tags[k] in (9, 10, 11):
            owner, name_and_type = pool[k]  # type: ignore[misc]
            name, desc = pool[name_and_type]  # type: ignore[misc]
            cls.refs.append((tags[k], class_name(owner), utf(name), utf(desc)))
    return cls


class Classpath:
    """The classes of some jars, parsed on first use."""

    def __init__(self, jars: Iterable[Path]) -> None:
        self._where: dict[str, tuple[Path, str]] = {}
        for jar in jars:
            with zipfile.ZipFile(jar) as z:
                for entry in z.namelist():
                    if entry.endswith(".class") and not entry.startswith("META-INF/"):
                        self._where.setdefault(entry[: -len(".class")], (jar, entry))
        self._parsed: dict[str, ClassFile] = {}

    def names(self) -> set[str]:
        return set(self._where)

    def get(self, name: str) -> ClassFile | None:
        if name not in self._parsed:
            if name not in self._where:
                return None
            jar, entry = self._where[name]
            with zipfile.ZipFile(jar) as z:
                self._parsed[name] = parse(z.read(entry))
        return self._parsed[name]

    def supertypes(self, name: str) -> Iterable[ClassFile | str]:
        """``name`` and every supertype, classes first; a name for a type not on the classpath."""
        seen: set[str] = set()
        chain: list[ClassFile | str] = []
        interfaces: list[str] = []
        current: str | None = name
        while current is not None and current not in seen:
            seen.add(current)
            cls = self.get(current)
            if cls is None:
                chain.append(current)
                break
            chain.append(cls)
            interfaces += cls.interfaces
            current = cls.super_name
        while interfaces:
            iface = interfaces.pop(0)
            if iface in seen:
                continue
            seen.add(iface)
            cls = self.get(iface)
            chain.append(cls if cls is not None else iface)
            if cls is not None:
                interfaces += cls.interfaces
        return chain


def link_problems(jar: Path, classpath_jars: Iterable[Path]) -> list[str]:
    """What in ``jar`` would not link against ``classpath_jars`` (empty when everything does)."""
    own = Classpath([jar])
    path = Classpath([jar, *classpath_jars])
    problems: set[str] = set()
    for name in sorted(own.names()):
        cls = own.get(name)
        assert cls is not None
        supertypes = list(path.supertypes(name))
        for t in supertypes:
            if isinstance(t, str) and not t.startswith(JDK):
                problems.add(f"{name}: supertype {t} not found")
        for tag, owner, member, desc in cls.refs:
            if owner.startswith("[") or owner.startswith(JDK) or owner in own.names():
                continue
            chain = list(path.supertypes(owner))
            missing = [t for t in chain if isinstance(t, str) and not t.startswith(JDK)]
            for t in missing:
                problems.add(f"{name} uses {owner}: {t} not found")
            declared = any(
                (member, desc) in (t.fields if tag == 9 else t.methods)
                for t in chain
                if isinstance(t, ClassFile)
            )
            # A JDK supertype (not read here) may declare it: taken as present.
            if not declared and not missing and not any(isinstance(t, str) for t in chain):
                problems.add(f"{name} uses {owner}.{member}{desc}, not found")
        if cls.access & (ACC_INTERFACE | ACC_ABSTRACT):
            continue
        implemented: set[tuple[str, str]] = set()
        abstract: dict[tuple[str, str], str] = {}
        for t in supertypes:
            if isinstance(t, str):
                continue
            for key, flags in t.methods.items():
                if flags & (ACC_STATIC | ACC_PRIVATE):
                    continue
                if flags & ACC_ABSTRACT:
                    abstract.setdefault(key, t.name)
                else:
                    implemented.add(key)
        for (member, desc), where in abstract.items():
            if (member, desc) not in implemented:
                problems.add(f"{name} does not implement {where}.{member}{desc}")
    return sorted(problems)
