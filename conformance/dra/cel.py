"""CEL spellings of device attributes, capacities and literals, as DeviceClass and request selectors use them
(``resource.k8s.io/v1`` CELDeviceSelector: ``device.attributes["<domain>"].<id>``, ``device.capacity[...]``).
"""

from __future__ import annotations


def cel_attribute(qualified: str) -> str:
    """CEL access for a qualified attribute: ``device.attributes["<domain>"].<id>``."""
    domain, ident = qualified.rsplit("/", 1)
    return f'device.attributes["{domain}"].{ident}'


def cel_capacity(qualified: str) -> str:
    """CEL access for a qualified capacity: ``device.capacity["<domain>"].<id>`` (a quantity)."""
    domain, ident = qualified.rsplit("/", 1)
    return f'device.capacity["{domain}"].{ident}'


def cel_literal(value) -> str:
    """A CEL literal for an attribute value (str quoted, bool ``true``/``false``, int as is)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)
