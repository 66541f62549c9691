"""Streamlit glue for Dayanak. `ragcore` never imports Streamlit; everything UI lives here.

Pages under `pages/` stay thin: they fetch the app context and the signed-in user from this
package and call `ragcore` through the helpers here.
"""
