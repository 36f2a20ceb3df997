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


def cel_attribute_in(qualified: str, values) -> str:
    """CEL true for a device whose attribute ``qualified`` is one of ``values`` (in the order given):
    ``device.attributes["<domain>"].<id> in [v1, v2]``; the values share one type (CEL lists are homogeneous)."""
    return f"{cel_attribute(qualified)} in [{', '.join(cel_literal(v) for v in values)}]"


def cel_literal(value) -> str:
    """A CEL literal for an attribute value (str quoted, bool ``true``/``false``, int as is)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)
